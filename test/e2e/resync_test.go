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
	"testing"
	"time"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// At steady state a resync lists and writes nothing: two LISTs, whatever the
// number of Foos (up to 500 a page), and no request about a converged Foo.
func TestResyncOfConvergedFoosOnlyLists(t *testing.T) {
	ns := namespace(t)
	const n = 20
	for i := range n {
		createFoo(t, newFoo(ns, fmt.Sprintf("foo-%d", i), fmt.Sprintf("dep-%d", i), 1))
	}
	eventually(t, "the Foos converged", func(ctx context.Context) (bool, string) { return converged(ctx, ns, n) })

	_, from := reconcilerAudit(t, 0)
	if _, err := env.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The audit log is written before each response: the resync's requests
	// are all there once it is answered.
	events, _ := reconcilerAudit(t, from)
	count := map[string]int{}
	for _, e := range events {
		if e.ObjectRef.Namespace == ns {
			t.Errorf("the resync made a request about a converged Foo: %s", e.RequestURI)
		}
		// Other tests' namespaces, being deleted, make events meanwhile (their
		// Deployments' deletes, with a LIST by field selector): not the resync's.
		if e.ObjectRef.Namespace == "" && e.Verb == "list" {
			count[e.Request()]++
		}
	}
	if count["list samplecontroller.knative.io/foos"] != 1 || count["list apps/deployments"] != 1 {
		t.Errorf("the resync's requests: %v; want one LIST of Foos and one of Deployments", count)
	}
}

// The API server crashes (SIGKILL) in the middle of a burst: the adapters'
// watches resume, but what changed around the gap is never sent. The next
// resync (PingSource's schedule bounds when it comes) converges every Foo.
func TestEveryFooConvergesAfterAnAPIServerCrash(t *testing.T) {
	ns := namespace(t)
	const n = 200
	half := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	wg.Go(func() {
		for i := range n {
			if i == n/2 {
				close(half)
			}
			// Creates retry through the restart, as a user would.
			err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true,
				func(ctx context.Context) (bool, error) {
					_, err := env.Foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, newFoo(ns, fmt.Sprintf("foo-%d", i), fmt.Sprintf("dep-%d", i), 1), metav1.CreateOptions{})
					return err == nil || apierrs.IsAlreadyExists(err), nil
				})
			if err != nil {
				errs <- fmt.Errorf("creating foo-%d: %w", i, err)
			}
		}
	})
	<-half
	if err := env.CP.RestartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// The ping, as PingSource sends it (a 503 is delivered again, as
	// PingSource's retries would).
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 2*time.Minute, true,
		func(ctx context.Context) (bool, error) {
			_, last = env.Resync(ctx)
			return last == nil, nil
		})
	if err != nil {
		t.Fatalf("the resync was never answered 200: %v; last: %v", err, last)
	}
	// Answered once every Foo that needed work was reconciled: no polling.
	if ok, msg := converged(context.Background(), ns, n); !ok {
		t.Errorf("not converged when the resync was answered: %s", msg)
	}

	// The adapters' watches resume on their own, but not at once: until they
	// do, only resyncs reconcile. The tests after this one need them.
	if err := env.WaitForDelivery(context.Background()); err != nil {
		t.Fatalf("the adapters did not deliver again after the restart: %v", err)
	}
	t.Logf("the adapters delivered again %v after the API server's restart", time.Since(restarted).Round(time.Second))
}
