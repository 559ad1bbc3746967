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

// Package resources builds the objects a Bar owns, as pure functions of the
// Bar, so that what the reconciler writes can be tested on its own.
package resources

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/kmeta"

	examplev1alpha1 "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/apis/example/v1alpha1"
)

// BarLabelKey labels the objects a Bar owns with the Bar's name.
const BarLabelKey = "example.frugal-operator.dev/bar"

// MakeConfigMap returns the ConfigMap a Bar publishes its data to: the Bar's
// name and namespace, a copy of its data, and a controller reference to the
// Bar, so that garbage collection removes it with the Bar.
func MakeConfigMap(bar *examplev1alpha1.Bar) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            bar.Name,
			Namespace:       bar.Namespace,
			Labels:          map[string]string{BarLabelKey: bar.Name},
			OwnerReferences: []metav1.OwnerReference{*kmeta.NewControllerRef(bar)},
		},
		Data: maps.Clone(bar.Spec.Data),
	}
}
