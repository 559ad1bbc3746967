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
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// 14. With sender authentication on, the add of a Foo never reconciled, sent
// by the Foos' ApiServerSource adapter, is believed in place of a read, as an
// informer's cache would be: a burst of new Foos converges with no GET at
// all, each with its three writes (its Deployment, one status, one Event).
// A stale add of that kind, delivered after the Foo changed and its
// Deployment followed, rolls nothing back.
func TestAnAuthenticatedBurstReadsNothing(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	withSenderAuthentication(t, ns, "probe")

	_, from := reconcilerAudit(t, 0)
	const n = 20
	created := make([]*samplesv1alpha1.Foo, n)
	for i := range n {
		created[i] = createFoo(t, newFoo(ns, fmt.Sprintf("foo-%d", i), fmt.Sprintf("dep-%d", i), 1))
	}
	eventually(t, "the Foos converged", func(ctx context.Context) (bool, string) { return converged(ctx, ns, n+1) })
	// The Events are posted after the status, by the recorder's goroutine.
	want := map[string]int{"create apps/deployments": n, "update samplecontroller.knative.io/foos/status": n, "create /events": n}
	eventually(t, "the burst's requests are three writes per Foo, and no read", func(context.Context) (bool, string) {
		events, _ := reconcilerAudit(t, from)
		got := map[string]int{}
		for _, e := range events {
			if e.ObjectRef != nil && e.ObjectRef.Namespace == ns {
				got[e.Request()]++
			}
		}
		diff := cmp.Diff(want, got)
		return diff == "", "requests (-want, +got): " + diff
	})

	// foo-0 changes and converges; then its add, as created, comes again.
	foos := env.Foos.SamplecontrollerV1alpha1().Foos(ns)
	if _, err := foos.Patch(ctx, "foo-0", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "foo-0's change converged", func(ctx context.Context) (bool, string) {
		ok, err := convergedFooNow(ctx, ns, "foo-0")
		return ok, fmt.Sprint(err)
	})
	stale := created[0]
	stale.APIVersion, stale.Kind = samplesv1alpha1.SchemeGroupVersion.String(), "Foo"
	if code, body, err := env.SendObjectWithToken(ctx, tokenFor(t, localenv.FoosIdentity, localenv.OIDCAudience), "add", stale, "foos"); err != nil || code != http.StatusOK {
		t.Fatalf("the stale add: answered %d %q, %v; want 200", code, body, err)
	}
	d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "dep-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 3 {
		t.Errorf("the stale add rolled the Deployment back to %d replicas, want 3", *d.Spec.Replicas)
	}
	if ok, err := convergedFooNow(ctx, ns, "foo-0"); !ok {
		t.Errorf("foo-0 is not converged once the stale add is answered (%v)", err)
	}
}
