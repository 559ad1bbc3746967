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
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	"github.com/frugal-operator/foo-operator/test/clustertest"
)

// 1. A new Foo gets its Deployment, controlled by it, and a status.
func TestCreateFoo(t *testing.T) {
	ns := namespace(t)
	foo := createFoo(t, newFoo(ns, "web", "web-nginx", 2))
	d := deploymentReplicas(t, ns, "web-nginx", 2)
	if !metav1.IsControlledBy(d, foo) {
		t.Errorf("deployment owners = %+v, want controlled by Foo %s", d.OwnerReferences, foo.UID)
	}
	if d.Labels[resources.FooLabelKey] != "web" {
		t.Errorf("deployment labels = %v", d.Labels)
	}
	eventually(t, "the Foo's status is written", func(ctx context.Context) (bool, string) {
		f, err := getFoo(ctx, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		c := f.Status.GetCondition(samplesv1alpha1.FooConditionDeploymentReady)
		ready := f.Status.GetCondition(samplesv1alpha1.FooConditionReady)
		return f.Status.ObservedGeneration == f.Generation && c != nil && ready != nil && c.IsUnknown() &&
			c.Reason == samplesv1alpha1.ReasonDeploymentRollingOut, fmt.Sprintf("%+v", f.Status)
	})
}

// 2. Changing spec.replicas changes the Deployment.
func TestChangeReplicas(t *testing.T) {
	ns := namespace(t)
	createFoo(t, newFoo(ns, "web", "web", 1))
	deploymentReplicas(t, ns, "web", 1)
	patch(t, ns, "web", `{"spec":{"replicas":4}}`)
	deploymentReplicas(t, ns, "web", 4)
	eventually(t, "observedGeneration follows", func(ctx context.Context) (bool, string) {
		f, err := getFoo(ctx, ns, "web")
		return err == nil && f.Generation == 2 && f.Status.ObservedGeneration == 2, fmt.Sprint(f.Status.ObservedGeneration, err)
	})
}

func patch(t *testing.T, ns, name, p string) {
	t.Helper()
	_, err := env.Foos.SamplecontrollerV1alpha1().Foos(ns).Patch(context.Background(), name, types.MergePatchType, []byte(p), metav1.PatchOptions{})
	if err != nil {
		t.Fatal("patching Foo:", err)
	}
}

// 3. A Deployment scaled by hand is scaled back: owned-Deployment events.
func TestHandScaledDeploymentIsReverted(t *testing.T) {
	ns := namespace(t)
	createFoo(t, newFoo(ns, "web", "web", 2))
	deploymentReplicas(t, ns, "web", 2)
	_, err := env.Kube.AppsV1().Deployments(ns).Patch(context.Background(), "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":7}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deploymentReplicas(t, ns, "web", 2)
}

// 4. A deleted Deployment is made again.
func TestDeletedDeploymentIsRecreated(t *testing.T) {
	ns := namespace(t)
	createFoo(t, newFoo(ns, "web", "web", 1))
	old := deploymentReplicas(t, ns, "web", 1)
	if err := env.Kube.AppsV1().Deployments(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new deployment", func(ctx context.Context) (bool, string) {
		d, err := getDeployment(ctx, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		return d.UID != old.UID, "still the old one"
	})
}

// 5. The Deployment's status, written as the deployment controller and
// kubelet would, reaches the Foo's status.
func TestDeploymentStatusReachesTheFoo(t *testing.T) {
	ns := namespace(t)
	createFoo(t, newFoo(ns, "web", "web", 3))
	d := deploymentReplicas(t, ns, "web", 3)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3}
	if _, err := env.Kube.AppsV1().Deployments(ns).UpdateStatus(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Foo is Ready with 3 available", func(ctx context.Context) (bool, string) {
		f, err := getFoo(ctx, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		return f.Status.AvailableReplicas == 3 && f.Status.IsReady(), fmt.Sprintf("%+v", f.Status)
	})
}

// 6. A Deployment of that name that the Foo does not own is left alone.
func TestDeploymentNotOwned(t *testing.T) {
	ns := namespace(t)
	theirs := resources.MakeDeployment(newFoo(ns, "x", "taken", 5))
	theirs.OwnerReferences = nil
	theirs, err := env.Kube.AppsV1().Deployments(ns).Create(context.Background(), theirs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createFoo(t, newFoo(ns, "web", "taken", 1))
	eventually(t, "the Foo reports DeploymentNotOwned", func(ctx context.Context) (bool, string) {
		f, err := getFoo(ctx, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		c := f.Status.GetCondition(samplesv1alpha1.FooConditionReady)
		return c != nil && c.IsFalse() && c.Reason == samplesv1alpha1.ReasonDeploymentNotOwned, fmt.Sprintf("%+v", c)
	})
	want := `Resource "taken" already exists and is not managed by Foo`
	eventually(t, "a Warning event on the Foo", func(ctx context.Context) (bool, string) {
		evs, err := env.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.Message == want {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none %q", len(evs.Items), want)
	})
	d, err := getDeployment(context.Background(), ns, "taken")
	if err != nil {
		t.Fatal(err)
	}
	if d.ResourceVersion != theirs.ResourceVersion || len(d.OwnerReferences) != 0 || *d.Spec.Replicas != 5 {
		t.Errorf("the Deployment was touched: rv %s -> %s, owners %v, replicas %d", theirs.ResourceVersion, d.ResourceVersion, d.OwnerReferences, *d.Spec.Replicas)
	}
}

// 7. Deleting a Foo garbage-collects its Deployment.
func TestDeletedFooTakesItsDeployment(t *testing.T) {
	ns := namespace(t)
	createFoo(t, newFoo(ns, "web", "web", 1))
	deploymentReplicas(t, ns, "web", 1)
	if err := env.Foos.SamplecontrollerV1alpha1().Foos(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The garbage collector learns of a new CRD at its next discovery, every
	// 30 s, so the first Foo it collects can take that long.
	clustertest.Eventually(t, 2*time.Minute, "the deployment is gone", func(ctx context.Context) (bool, string) {
		_, err := getDeployment(ctx, ns, "web")
		return apierrs.IsNotFound(err), fmt.Sprint(err)
	})
}

// 8. Bad Foos are rejected at admission, by the schema and the CEL rules.
func TestInvalidFoosAreRejected(t *testing.T) {
	ns := namespace(t)
	foos := env.Foos.SamplecontrollerV1alpha1().Foos(ns)
	tests := []struct {
		name string
		foo  *samplesv1alpha1.Foo
		want string
	}{
		{"empty deploymentName", newFoo(ns, "a", "", 1), "spec.deploymentName in body should be at least 1 chars long"},
		{"deploymentName not DNS-1123", newFoo(ns, "b", "Not_A_Name", 1), "spec.deploymentName: Invalid value"},
		{"negative replicas", newFoo(ns, "c", "c", -1), "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"},
		{"name too long for a label", newFoo(ns, strings.Repeat("n", 64), "d", 1), "must be no more than 63 characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := foos.Create(context.Background(), tc.foo, metav1.CreateOptions{})
			if !apierrs.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create = %v, want Invalid with %q", err, tc.want)
			}
		})
	}
	t.Run("deploymentName changed", func(t *testing.T) {
		createFoo(t, newFoo(ns, "e", "e", 1))
		_, err := foos.Patch(context.Background(), "e", types.MergePatchType, []byte(`{"spec":{"deploymentName":"other"}}`), metav1.PatchOptions{})
		want := "deploymentName cannot change once set"
		if !apierrs.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("patch = %v, want Invalid with %q", err, want)
		}
	})
	t.Run("replicas defaulted", func(t *testing.T) {
		f := newFoo(ns, "f", "f", 0)
		f.Spec.Replicas = nil
		got := createFoo(t, f)
		if got.Spec.Replicas == nil || *got.Spec.Replicas != 1 {
			t.Errorf("replicas = %s, want the default 1", ptrString(got.Spec.Replicas))
		}
	})
}
