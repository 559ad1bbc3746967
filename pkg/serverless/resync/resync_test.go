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

package resync

import (
	"context"
	"sort"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgotesting "k8s.io/client-go/testing"
)

// The owners of this test are ConfigMaps asking, in data["deployment"], for
// a Deployment of data["replicas"] replicas ("" asks for nothing: the owner
// alone decides, and needs work when data["dirty"] is set).
func owner(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}, Data: data}
}

func owned(name string, replicas int32, labelled bool) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
	if labelled {
		d.Labels = map[string]string{"owned": "yes"}
	}
	return d
}

func TestKeysNeedingWork(t *testing.T) {
	kc := kubefake.NewSimpleClientset(
		owner("converged", map[string]string{"deployment": "a", "replicas": "1"}),
		owner("drifted", map[string]string{"deployment": "b", "replicas": "2"}),
		owner("missing", map[string]string{"deployment": "c", "replicas": "1"}),
		owner("foreign", map[string]string{"deployment": "d", "replicas": "1"}),
		owner("alone-clean", nil),
		owner("alone-dirty", map[string]string{"dirty": "yes"}),
		owned("a", 1, true), owned("b", 1, true), owned("d", 1, false),
	)
	var sawManagedFields bool
	p := Pairs[*corev1.ConfigMap, *appsv1.Deployment]{
		Owners: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return kc.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, opts)
		},
		Owned: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return kc.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
		},
		OwnedSelector: "owned",
		OwnedName:     func(o *corev1.ConfigMap) string { return o.Data["deployment"] },
		NeedsWork: func(_ context.Context, o *corev1.ConfigMap, d *appsv1.Deployment) bool {
			sawManagedFields = sawManagedFields || o.ManagedFields != nil
			if o.Data["deployment"] == "" {
				return o.Data["dirty"] != ""
			}
			return d == nil || d.Name != o.Data["deployment"] || o.Data["replicas"] != strconv.Itoa(int(*d.Spec.Replicas))
		},
	}
	got, err := p.KeysNeedingWork(context.Background())
	if err != nil {
		t.Fatal("KeysNeedingWork() =", err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	want := []types.NamespacedName{{Namespace: "ns", Name: "alone-dirty"}, {Namespace: "ns", Name: "drifted"},
		{Namespace: "ns", Name: "foreign"}, {Namespace: "ns", Name: "missing"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error("KeysNeedingWork (-want, +got):", diff)
	}
	if sawManagedFields {
		t.Error("owners were held with their managed fields")
	}
	var lists []string
	for _, a := range kc.Actions() {
		l := a.(clientgotesting.ListAction)
		lists = append(lists, a.GetVerb()+" "+a.GetResource().Resource+" "+l.GetListRestrictions().Labels.String())
	}
	if diff := cmp.Diff([]string{"list configmaps ", "list deployments owned"}, lists); diff != "" {
		t.Error("requests (-want, +got):", diff)
	}
}
