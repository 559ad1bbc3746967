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

package testing

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
)

// FooOption changes a Foo that NewFoo builds.
type FooOption func(*samplesv1alpha1.Foo)

// NewFoo returns a Foo named name in namespace ns, with a UID and a
// generation, changed by the options in order.
func NewFoo(name, ns string, opts ...FooOption) *samplesv1alpha1.Foo {
	f := &samplesv1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  ns,
			UID:        types.UID(ns + "/" + name + "-uid"),
			Generation: 1,
		},
	}
	for _, opt := range opts {
		opt(f)
	}
	return f
}

// WithDeploymentName sets spec.deploymentName.
func WithDeploymentName(name string) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.Spec.DeploymentName = name }
}

// WithReplicas sets spec.replicas.
func WithReplicas(n int32) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.Spec.Replicas = ptr.Int32(n) }
}

// WithGeneration sets metadata.generation.
func WithGeneration(g int64) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.Generation = g }
}

// WithFooDeletionTimestamp marks the Foo as being deleted.
func WithFooDeletionTimestamp(f *samplesv1alpha1.Foo) {
	t := metav1.NewTime(time.Unix(1e9, 0))
	f.DeletionTimestamp = &t
}

// WithInitFooConditions sets every condition to Unknown.
func WithInitFooConditions(f *samplesv1alpha1.Foo) {
	f.Status.InitializeConditions()
}

// WithObservedGeneration sets status.observedGeneration to the Foo's generation.
func WithObservedGeneration(f *samplesv1alpha1.Foo) {
	f.Status.ObservedGeneration = f.Generation
}

// WithStatusOf propagates a Deployment's status into the Foo's.
func WithStatusOf(d *appsv1.Deployment) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.Status.PropagateDeploymentStatus(d) }
}

// WithDeploymentNotOwned marks the Foo's Deployment as someone else's.
func WithDeploymentNotOwned(f *samplesv1alpha1.Foo) {
	f.Status.MarkDeploymentNotOwned(f.Spec.DeploymentName)
}

// WithSpecInvalid marks the Foo's spec as invalid with msg.
func WithSpecInvalid(msg string) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.Status.MarkSpecInvalid(msg) }
}

// DeploymentOption changes a Deployment.
type DeploymentOption func(*appsv1.Deployment)

// WithDeploymentReplicas sets spec.replicas.
func WithDeploymentReplicas(n int32) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.Int32(n) }
}

// WithDeploymentAvailable writes the status a rolled-out Deployment with
// every replica available reports.
func WithDeploymentAvailable(d *appsv1.Deployment) {
	n := *d.Spec.Replicas
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Replicas:           n,
		UpdatedReplicas:    n,
		ReadyReplicas:      n,
		AvailableReplicas:  n,
	}
}

// WithDeploymentRollingOut writes the status of a Deployment that has
// observed its spec and has available of its replicas available.
func WithDeploymentRollingOut(available int32) DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           *d.Spec.Replicas,
			UpdatedReplicas:    *d.Spec.Replicas,
			AvailableReplicas:  available,
		}
	}
}

// WithDeploymentFailed writes the status of a Deployment that gave up progressing.
func WithDeploymentFailed(d *appsv1.Deployment) {
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Conditions: []appsv1.DeploymentCondition{{
			Type:    appsv1.DeploymentProgressing,
			Status:  corev1.ConditionFalse,
			Reason:  "ProgressDeadlineExceeded",
			Message: "ReplicaSet \"x\" has timed out progressing.",
		}},
	}
}

// WithDeploymentLabels replaces the Deployment's labels.
func WithDeploymentLabels(l map[string]string) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Labels = l }
}

// WithoutOwner removes the Deployment's owner references.
func WithoutOwner(d *appsv1.Deployment) {
	d.OwnerReferences = nil
}

// WithImage sets the image of the Deployment's first container.
func WithImage(image string) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image }
}

// Deployment applies options to a copy of d.
func Deployment(d *appsv1.Deployment, opts ...DeploymentOption) *appsv1.Deployment {
	d = d.DeepCopy()
	for _, opt := range opts {
		opt(d)
	}
	return d
}
