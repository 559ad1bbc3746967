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

// Foo asks for a Deployment of nginx with a name and a number of replicas,
// and reports how many of them are available.
//
// +genclient
// +genreconciler
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Foo struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the user asks for.
	Spec FooSpec `json:"spec"`

	// Status is what the reconciler last saw.
	// +optional
	Status FooStatus `json:"status,omitempty"`
}

var (
	_ apis.Validatable   = (*Foo)(nil)
	_ apis.Defaultable   = (*Foo)(nil)
	_ kmeta.OwnerRefable = (*Foo)(nil)
	_ duckv1.KRShaped    = (*Foo)(nil)
)

// FooSpec is the desired state of a Foo.
type FooSpec struct {
	// DeploymentName names the Deployment this Foo owns, in the Foo's
	// namespace. It cannot change once set.
	DeploymentName string `json:"deploymentName"`

	// Replicas is the number of nginx pods to run. Defaults to 1.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
}

// FooStatus is the observed state of a Foo.
type FooStatus struct {
	duckv1.Status `json:",inline"`

	// AvailableReplicas is the number of available replicas of the Deployment.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
}

// FooList is a list of Foos.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type FooList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	Items []Foo `json:"items"`
}

// GetGroupVersionKind implements kmeta.OwnerRefable.
func (*Foo) GetGroupVersionKind() schema.GroupVersionKind {
	return SchemeGroupVersion.WithKind("Foo")
}

// GetStatus implements duckv1.KRShaped.
func (f *Foo) GetStatus() *duckv1.Status {
	return &f.Status.Status
}
