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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
)

// 11a. The template the API server keeps for a Foo's Deployment, defaults
// filled in, is exactly the one the operator builds: once the Foo has
// converged, reconciles (a resync's, and those the deployment controller's
// status writes cause) write nothing, so the Deployment stays at generation
// 1 and no DeploymentUpdated event is recorded.
func TestDriftNoWriteWhenNothingDrifted(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	foo := createFoo(t, newFoo(ns, "web", "web", 1))
	deploymentReplicas(t, ns, "web", 1)
	eventually(t, "the Foo's status is written", func(ctx context.Context) (bool, string) {
		f, err := getFoo(ctx, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		return f.Status.ObservedGeneration == f.Generation &&
			f.Status.GetCondition(samplesv1alpha1.FooConditionDeploymentReady) != nil, fmt.Sprintf("%+v", f.Status)
	})

	d, err := getDeployment(ctx, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	// Said plainly when a new Kubernetes defaults one more field.
	if want := resources.MakeDeployment(foo).Spec.Template; !equality.Semantic.DeepEqual(want, d.Spec.Template) {
		t.Errorf("the API server's template differs from MakeDeployment's (-built, +served):\n%s", cmp.Diff(want, d.Spec.Template))
	}

	// The resync is answered once the Foo is reconciled: at least one
	// reconcile against the Deployment as the server keeps it.
	if _, err := env.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	stays(t, 5*time.Second, "the Deployment is not written", func(ctx context.Context) (bool, string) {
		d, err := getDeployment(ctx, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		if d.Generation != 1 {
			return false, fmt.Sprintf("generation %d, want 1; template %+v", d.Generation, d.Spec.Template)
		}
		if n, err := deploymentUpdatedEvents(ctx, ns, "web"); err != nil || n != 0 {
			return false, fmt.Sprintf("%d DeploymentUpdated events (%v)", n, err)
		}
		return true, ""
	})
}

// 11b. The operator owns the whole pod template: a sidecar container, an
// env var and a command added to the Deployment by hand are removed.
func TestDriftByAdditionIsReverted(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	foo := createFoo(t, newFoo(ns, "web", "web", 1))
	deploymentReplicas(t, ns, "web", 1)
	want := resources.MakeDeployment(foo).Spec.Template

	var edited int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := getDeployment(ctx, ns, "web")
		if err != nil {
			return err
		}
		ps := &d.Spec.Template.Spec
		ps.Containers[0].Env = append(ps.Containers[0].Env, corev1.EnvVar{Name: "DEBUG", Value: "1"})
		ps.Containers[0].Command = []string{"nginx", "-g", "daemon off;"}
		ps.Containers = append(ps.Containers, corev1.Container{
			Name: "sidecar", Image: "busybox:1.36", Command: []string{"sleep", "infinity"},
		})
		d, err = env.Kube.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		if err == nil {
			edited = d.Generation
		}
		return err
	})
	if err != nil {
		t.Fatal("editing the Deployment:", err)
	}

	seen := "" // what the last read found: the poll's last read may time out
	eventually(t, "the template is back to the desired one", func(ctx context.Context) (bool, string) {
		d, err := getDeployment(ctx, ns, "web")
		if err != nil {
			return false, fmt.Sprintf("%v; before that, %s", err, seen)
		}
		seen = fmt.Sprintf("generation %d (edited at %d), template (-want, +got):\n%s", d.Generation, edited, cmp.Diff(want, d.Spec.Template))
		return d.Generation > edited && equality.Semantic.DeepEqual(want, d.Spec.Template), seen
	})
	// What 11a checks the absence of is recorded here.
	eventually(t, "a DeploymentUpdated event", func(ctx context.Context) (bool, string) {
		n, err := deploymentUpdatedEvents(ctx, ns, "web")
		return err == nil && n > 0, fmt.Sprintf("%d events (%v)", n, err)
	})
}

// deploymentUpdatedEvents counts the DeploymentUpdated events recorded in
// ns for Deployment name (on its Foo), repetitions included.
func deploymentUpdatedEvents(ctx context.Context, ns, name string) (int32, error) {
	evs, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=DeploymentUpdated"})
	if err != nil {
		return 0, err
	}
	var n int32
	for _, e := range evs.Items {
		if e.Message == fmt.Sprintf("Updated deployment %q", name) {
			n += max(e.Count, 1)
		}
	}
	return n, nil
}

// stays polls cond every 250ms for the whole of within, failing the test
// as soon as it does not hold, with what it said.
func stays(t *testing.T, within time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if ok, msg := cond(context.Background()); !ok {
			t.Fatalf("%s: %s", what, msg)
		}
	}
}
