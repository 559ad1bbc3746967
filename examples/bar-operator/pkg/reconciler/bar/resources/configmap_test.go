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

package resources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/ptr"

	examplev1alpha1 "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/apis/example/v1alpha1"
)

func TestMakeConfigMap(t *testing.T) {
	bar := func(data map[string]string) *examplev1alpha1.Bar {
		return &examplev1alpha1.Bar{
			ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "team", UID: "1234"},
			Spec:       examplev1alpha1.BarSpec{Data: data},
		}
	}
	want := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:      "settings",
				Namespace: "team",
				Labels:    map[string]string{"example.frugal-operator.dev/bar": "settings"},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion:         "example.frugal-operator.dev/v1alpha1",
					Kind:               "Bar",
					Name:               "settings",
					UID:                "1234",
					Controller:         ptr.Bool(true),
					BlockOwnerDeletion: ptr.Bool(true),
				}},
			},
			Data: data,
		}
	}
	tests := []struct {
		name string
		bar  *examplev1alpha1.Bar
		want *corev1.ConfigMap
	}{
		{"data", bar(map[string]string{"a": "1", "app.properties": "x=1\n"}), want(map[string]string{"a": "1", "app.properties": "x=1\n"})},
		{"empty value", bar(map[string]string{"a": ""}), want(map[string]string{"a": ""})},
		{"no data", bar(nil), want(nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, MakeConfigMap(tc.bar)); diff != "" {
				t.Error("MakeConfigMap (-want, +got):", diff)
			}
		})
	}
}

// TestMakeConfigMapCopiesData: the ConfigMap must not share the Bar's map,
// which belongs to the informer's cache.
func TestMakeConfigMapCopiesData(t *testing.T) {
	b := &examplev1alpha1.Bar{Spec: examplev1alpha1.BarSpec{Data: map[string]string{"a": "1"}}}
	cm := MakeConfigMap(b)
	cm.Data["a"] = "changed"
	if got := b.Spec.Data["a"]; got != "1" {
		t.Errorf("the Bar's data changed with its ConfigMap's: a = %q", got)
	}
}
