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

package foo

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgotesting "k8s.io/client-go/testing"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	foofake "github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned/fake"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	. "github.com/frugal-operator/foo-operator/pkg/reconciler/testing" //nolint:revive,staticcheck // object builders
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync/resynctest"
)

// converged returns a Foo named name, asking for Deployment dep, whose
// status reports that Deployment available, and the Deployment.
func converged(name, dep string, opts ...FooOption) (*samplesv1alpha1.Foo, *appsv1.Deployment) {
	spec := []FooOption{WithDeploymentName(dep), WithReplicas(2)}
	d := Deployment(resources.MakeDeployment(NewFoo(name, ns, spec...)), WithDeploymentAvailable)
	f := NewFoo(name, ns, append(spec, append([]FooOption{WithInitFooConditions, WithStatusOf(d), WithObservedGeneration}, opts...)...)...)
	return f, d
}

func TestKeysNeedingWork(t *testing.T) {
	var foos, deps []runtime.Object
	add := func(f *samplesv1alpha1.Foo, d *appsv1.Deployment) {
		foos = append(foos, f)
		if d != nil {
			deps = append(deps, d)
		}
	}
	add(converged("converged", "converged"))
	add(converged("new-generation", "new-generation", WithGeneration(2)))
	f, _ := converged("missing", "missing")
	add(f, nil)
	f, d := converged("drifted", "drifted")
	add(f, Deployment(d, WithDeploymentReplicas(5)))
	f, d = converged("drifted-template", "drifted-template")
	add(f, Deployment(d, WithImage("busybox")))
	f, d = converged("status-behind", "status-behind")
	add(f, Deployment(d, WithDeploymentRollingOut(1)))
	// Refused its name by a Deployment nobody's Foo controls (and unlabeled).
	f, d = converged("blocked-foreign", "foreign", WithDeploymentNotOwned)
	add(f, Deployment(d, WithoutOwner, WithDeploymentLabels(nil)))
	// Refused its name by another Foo's Deployment.
	f, _ = converged("blocked-by-foo", "converged", WithDeploymentNotOwned)
	add(f, nil)
	add(converged("being-deleted", "gone", WithFooDeletionTimestamp))
	add(converged("invalid-reported", "invalid-reported", WithReplicas(-1), WithSpecInvalid("bad")))
	add(converged("invalid-not-reported", "invalid-not-reported", WithReplicas(-1)))

	fc, kc := foofake.NewSimpleClientset(foos...), kubefake.NewSimpleClientset(deps...)
	got, err := NewLister(fc, kc).KeysNeedingWork(context.Background())
	if err != nil {
		t.Fatal("KeysNeedingWork() =", err)
	}
	want := []string{"blocked-by-foo", "blocked-foreign", "drifted", "drifted-template", "invalid-not-reported",
		"missing", "new-generation", "status-behind"}
	if diff := cmp.Diff(want, names(got)); diff != "" {
		t.Error("KeysNeedingWork (-want, +got):", diff)
	}
	// Two LISTs, nothing else: the Foos that need work are read again when reconciled.
	actions := append(fc.Actions(), kc.Actions()...)
	if len(actions) != 2 || !actions[0].Matches("list", "foos") || !actions[1].Matches("list", "deployments") {
		t.Errorf("requests = %v, want a LIST of Foos and one of Deployments", actions)
	}
	if sel := actions[1].(clientgotesting.ListAction).GetListRestrictions().Labels.String(); sel != resources.FooLabelKey {
		t.Errorf("Deployments listed with selector %q, want those labelled %s", sel, resources.FooLabelKey)
	}
}

func TestClaimants(t *testing.T) {
	holder, _ := converged("holder", "web")
	blocked, _ := converged("blocked", "web", WithDeploymentNotOwned)
	deleting, _ := converged("deleting", "web", WithDeploymentNotOwned, WithFooDeletionTimestamp)
	other, _ := converged("other", "db")
	holderDeleting := holder.DeepCopy()
	WithFooDeletionTimestamp(holderDeleting)
	tests := []struct {
		name   string
		foos   []runtime.Object
		holder string
		want   []string
	}{
		{"the holder is gone: the blocked Foos", []runtime.Object{blocked, deleting, other}, "holder", []string{"blocked"}},
		{"the holder still asks for it: nobody else", []runtime.Object{holder, blocked, other}, "holder", nil},
		{"the holder is being deleted: the blocked Foos", []runtime.Object{holderDeleting, blocked}, "holder", []string{"blocked"}},
		{"nobody waits", []runtime.Object{other}, "holder", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := foofake.NewSimpleClientset(tc.foos...)
			got, err := NewLister(fc, kubefake.NewSimpleClientset()).Claimants(context.Background(), ns, "web", tc.holder)
			if err != nil {
				t.Fatal("Claimants() =", err)
			}
			if diff := cmp.Diff(tc.want, names(got)); diff != "" {
				t.Error("Claimants (-want, +got):", diff)
			}
			actions := fc.Actions()
			if len(actions) != 1 || actions[0].(clientgotesting.ListAction).GetListRestrictions().Fields.String() != "spec.deploymentName=web" {
				t.Errorf("requests = %v, want one LIST by spec.deploymentName", actions)
			}
		})
	}
}

func names(keys []types.NamespacedName) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.Name)
	}
	sort.Strings(out)
	return out
}

// A CRD without the selectable field makes the API server refuse the field
// selector: the Foos of the namespace are listed instead.
func TestClaimantsWithoutTheSelectableField(t *testing.T) {
	blocked, _ := converged("blocked", "web", WithDeploymentNotOwned)
	other, _ := converged("other", "db")
	fc := foofake.NewSimpleClientset(blocked, other)
	fc.PrependReactor("list", "foos", func(a clientgotesting.Action) (bool, runtime.Object, error) {
		if a.(clientgotesting.ListAction).GetListRestrictions().Fields.Empty() {
			return false, nil, nil
		}
		return true, nil, apierrs.NewBadRequest(`field label not supported: spec.deploymentName`)
	})
	got, err := NewLister(fc, kubefake.NewSimpleClientset()).Claimants(context.Background(), ns, "web", "holder")
	if err != nil {
		t.Fatal("Claimants() =", err)
	}
	if diff := cmp.Diff([]string{"blocked"}, names(got)); diff != "" {
		t.Error("Claimants (-want, +got):", diff)
	}
}

// The resync cannot miss work that a reconcile would do: over every row of
// ReconcileKind's table, the resync, listing the row's objects, names the
// row's Foo whenever the reconcile writes anything.
func TestNeedsWorkFindsTheWorkOfEveryRow(t *testing.T) {
	isFoo := func(o runtime.Object) bool { _, ok := o.(*samplesv1alpha1.Foo); return ok }
	resynctest.FindsEveryRowsWork(t, reconcileRows(), isFoo, func(objects []runtime.Object) ([]types.NamespacedName, error) {
		var foos, kube []runtime.Object
		for _, o := range objects {
			if isFoo(o) {
				foos = append(foos, o)
			} else {
				kube = append(kube, o)
			}
		}
		return NewLister(foofake.NewSimpleClientset(foos...), kubefake.NewSimpleClientset(kube...)).KeysNeedingWork(context.Background())
	})
}
