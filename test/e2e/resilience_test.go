/*
Copyright The Foo Operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"time"

	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// converged reports whether the n Foos of ns have converged.
func converged(ctx context.Context, ns string, n int) (bool, string) {
	return localenv.Converged(ctx, env.Kube, env.Foos, ns, n)
}

// 9a. A burst of Foos while the reconciler is killed twice (and started
// again, as Knative would): every Foo converges, nothing is duplicated or
// orphaned. What the crashes lose, the adapter's retries and the cold-start
// resync restore: with the answer after the reconcile (the default), and
// with the answer on enqueue (ACK=queued), where a crash loses the queue.
func TestBurstSurvivesCrashes(t *testing.T) {
	for _, ack := range []string{"reconciled", "queued"} {
		t.Run("ack "+ack, func(t *testing.T) {
			if err := env.StopReconciler(); err != nil {
				t.Fatal(err)
			}
			if err := env.StartReconciler(context.Background(), "--ack="+ack); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { // back to the default for the tests after this one
				_ = env.StopReconciler()
				if err := env.StartReconciler(context.Background()); err != nil {
					t.Error(err)
				}
			})
			burstSurvivesCrashes(t, "--ack="+ack)
		})
	}
}

func burstSurvivesCrashes(t *testing.T, args ...string) {
	ns := namespace(t)
	const n = 200
	var created atomic.Int32
	errs := make(chan error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f := newFoo(ns, fmt.Sprintf("foo-%03d", i), fmt.Sprintf("dep-%03d", i), int32(i%3))
				if _, err := env.Foos.SamplecontrollerV1alpha1().Foos(ns).Create(context.Background(), f, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
				created.Add(1)
			}
		}()
	}
	crashes := 0
	for i := range n {
		next <- i
		if i == 60 || i == 140 {
			// Crash while events are in flight, then come back.
			if err := env.KillReconciler(); err != nil {
				t.Fatal(err)
			}
			crashes++
			if err := env.StartReconciler(context.Background(), args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal("creating Foos:", err)
	}
	if crashes != 2 {
		t.Fatalf("%d crashes, want 2", crashes)
	}
	clustertest.Eventually(t, 3*time.Minute, "every Foo converges", func(ctx context.Context) (bool, string) { return converged(ctx, ns, n) })
}

// 9b. With the reconciler down while events fly, the adapter gives up on
// them; the resync event (PingSource's) restores convergence. The
// cold-start resync is off here, to show that the ping alone does it.
func TestResyncRestoresWhatTheAdapterDropped(t *testing.T) {
	ns := namespace(t)
	const n = 5
	before := env.AdapterDrops()
	if err := env.StopReconciler(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		createFoo(t, newFoo(ns, fmt.Sprintf("foo-%d", i), fmt.Sprintf("dep-%d", i), 1))
	}
	// The adapter retries each event for about 3 s, one event at a time.
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true,
		func(context.Context) (bool, error) { return env.AdapterDrops()-before >= n, nil })
	if err != nil {
		t.Fatalf("the adapter dropped %d events, want %d", env.AdapterDrops()-before, n)
	}
	if err := env.StartReconciler(context.Background(), "--cold-start-resync=false"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // back to the default for the tests after this one
		_ = env.StopReconciler()
		if err := env.StartReconciler(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if ok, msg := converged(context.Background(), ns, n); ok {
		t.Fatalf("converged before the resync (%s): the test shows nothing", msg)
	}
	if _, err := env.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The resync is answered once every Foo is reconciled: no polling.
	if ok, msg := converged(context.Background(), ns, n); !ok {
		t.Errorf("not converged when the resync was answered: %s", msg)
	}
}
