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

package knative

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/frugal-operator/foo-operator/test/clustertest"
)

// The API server restarted: the adapter's watch cannot resume (its
// resourceVersion is older than the new API server's watch cache), and a
// resilient adapter relists and sends nothing for what changed before it
// watched again. The source's adapter runs in fail-fast mode (its
// annotation): it exits instead, and once its restarted container is ready
// the event of its pod asks for the resync that restores what changed (the
// source's Deployed condition does not flip for so short a restart). Foos
// made and changed as soon as the API server answers again converge. The
// resync's PingSource is off, and the reconciler at zero: without that
// event nothing would wake it. No revision is made meanwhile: Knative's
// activator, its Revision informer behind after the restart, never routed
// to one made then (seen here: "Failed to get revision watcher", and every
// event to it timed out). Other informers of Knative's data plane were
// left behind too (the broker's filter kept a Trigger's old UID and
// dropped its events): this file's name sorts last, so that this test runs
// after every other (go test runs a package's files in the order of their
// names).
func TestAnAPIServerRestartLosesNothing(t *testing.T) {
	setResyncSchedule(t, "0 0 1 1 *")
	ns := namespace(t)
	createFoo(t, newFoo(ns, "changed", "changed", 1))
	deploymentReplicas(t, ns, "changed", 1)
	restarts := adapterRestarts(t)
	atZero(t, system, service)

	if err := command("hack/cluster/restart.sh", "apiserver").Run(); err != nil {
		t.Fatal("hack/cluster/restart.sh apiserver:", err)
	}
	answered := time.Now()
	const made = 5
	for i := range made {
		createFoo(t, newFoo(ns, fmt.Sprintf("new-%d", i), fmt.Sprintf("new-%d", i), 1))
	}
	patchFoo(t, ns, "changed", `{"spec":{"replicas":2}}`)
	clustertest.Eventually(t, 3*time.Minute, "every Foo made or changed after the API server's restart converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, made+1)
	})
	t.Logf("the Foos made and changed after the API server's restart converged %v after it answered again; the adapter's container restarted %d times meanwhile",
		time.Since(answered).Round(time.Millisecond), adapterRestarts(t)-restarts)
	// And the cluster delivers and wakes the reconciler as before.
	sourcesDeliver(t, ns)
}

// adapterRestarts counts the restarts of the adapters' containers.
func adapterRestarts(t *testing.T) int32 {
	t.Helper()
	pods, err := kube.CoreV1().Pods(adapterNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: adapterSelector})
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			n += c.RestartCount
		}
	}
	return n
}
