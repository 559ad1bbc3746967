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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"knative.dev/pkg/kmeta"
)

// Bar publishes its data as a ConfigMap of the same name in its namespace,
// and reports whether the ConfigMap holds it.
//
// +genclient
// +genreconciler
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Bar struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the user asks for.
	// +optional
	Spec BarSpec `json:"spec,omitempty"`

	// Status is what the reconciler last saw.
	// +optional
	Status BarStatus `json:"status,omitempty"`
}

var (
	_ apis.Validatable   = (*Bar)(nil)
	_ apis.Defaultable   = (*Bar)(nil)
	_ kmeta.OwnerRefable = (*Bar)(nil)
	_ duckv1.KRShaped    = (*Bar)(nil)
)

// BarSpec is the desired state of a Bar.
type BarSpec struct {
	// Data is what the Bar's ConfigMap holds: at most MaxDataKeys keys, each
	// a valid ConfigMap key, and at most MaxDataBytes of keys and values.
	// +optional
	Data map[string]string `json:"data,omitempty"`
}

// BarStatus is the observed state of a Bar.
type BarStatus struct {
	duckv1.Status `json:",inline"`

	// ConfigMapName names the ConfigMap, in the Bar's namespace, that holds
	// the Bar's current data; it is empty while no ConfigMap does.
	// +optional
	ConfigMapName string `json:"configMapName,omitempty"`
}

// BarList is a list of Bars.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type BarList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []Bar `json:"items"`
}

// GetGroupVersionKind implements kmeta.OwnerRefable.
func (*Bar) GetGroupVersionKind() schema.GroupVersionKind {
	return SchemeGroupVersion.WithKind("Bar")
}

// GetStatus implements duckv1.KRShaped.
func (b *Bar) GetStatus() *duckv1.Status {
	return &b.Status.Status
}
