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
	clientgotesting "k8s.io/client-go/testing"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	foofake "github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned/fake"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	. "github.com/frugal-operator/foo-operator/pkg/reconciler/testing" //nolint:revive,staticcheck // object builders
)

// converged returns a Foo named name, asking for Deployment dep, whose
// status reports that Deployment available, and the Deployment.
func converged(name, dep string, opts ...FooOption) (*samplesv1alpha1.Foo, *appsv1.Deployment) {
	spec := []FooOption{WithDeploymentName(dep), WithReplicas(2)}
	d := Deployment(resources.MakeDeployment(NewFoo(name, ns, spec...)), WithDeploymentAvailable)
	f := NewFoo(name, ns, append(spec, append([]FooOption{WithInitFooConditions, WithStatusOf(d), WithObservedGeneration}, opts...)...)...)
	return f, d
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
			got, err := claimants{fc}.of(context.Background(), ns, "web", tc.holder)
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
	got, err := claimants{fc}.of(context.Background(), ns, "web", "holder")
	if err != nil {
		t.Fatal("Claimants() =", err)
	}
	if diff := cmp.Diff([]string{"blocked"}, names(got)); diff != "" {
		t.Error("Claimants (-want, +got):", diff)
	}
}
