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
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
)

const (
	// FooConditionReady is True when the Foo's Deployment is available with
	// the replicas the Foo asks for.
	FooConditionReady = apis.ConditionReady

	// FooConditionDeploymentReady reflects the state of the Foo's Deployment.
	FooConditionDeploymentReady apis.ConditionType = "DeploymentReady"
)

// Reasons of the DeploymentReady condition.
const (
	// ReasonDeploymentNotOwned: a Deployment of that name exists and another
	// controller (or none) manages it.
	ReasonDeploymentNotOwned = "DeploymentNotOwned"
	// ReasonSpecInvalid: the Foo's spec fails validation (which admission
	// normally prevents), so no Deployment can be made of it.
	ReasonSpecInvalid = "SpecInvalid"
	// ReasonDeploymentRollingOut: the Deployment has not yet caught up with its spec.
	ReasonDeploymentRollingOut = "DeploymentRollingOut"
	// ReasonDeploymentFailed: the Deployment reports that it cannot progress.
	ReasonDeploymentFailed = "DeploymentFailed"
)

var fooCondSet = apis.NewLivingConditionSet(FooConditionDeploymentReady)

// GetConditionSet implements duckv1.KRShaped.
func (*Foo) GetConditionSet() apis.ConditionSet {
	return fooCondSet
}

// InitializeConditions sets every condition the Foo has to Unknown.
func (fs *FooStatus) InitializeConditions() {
	fooCondSet.Manage(fs).InitializeConditions()
}

// GetCondition returns the condition of the given type, or nil.
func (fs *FooStatus) GetCondition(t apis.ConditionType) *apis.Condition {
	return fooCondSet.Manage(fs).GetCondition(t)
}

// IsReady tells whether the Foo's Ready condition is True.
func (fs *FooStatus) IsReady() bool {
	return fooCondSet.Manage(fs).IsHappy()
}

// MarkDeploymentNotOwned records that the Deployment the Foo names exists
// and is not controlled by this Foo.
func (fs *FooStatus) MarkDeploymentNotOwned(name string) {
	fs.AvailableReplicas = 0
	fooCondSet.Manage(fs).MarkFalse(FooConditionDeploymentReady, ReasonDeploymentNotOwned,
		"Resource %q already exists and is not managed by Foo", name)
}

// MarkSpecInvalid records that no Deployment can be made of the Foo's spec.
func (fs *FooStatus) MarkSpecInvalid(msg string) {
	fs.AvailableReplicas = 0
	fooCondSet.Manage(fs).MarkFalse(FooConditionDeploymentReady, ReasonSpecInvalid, "%s", msg)
}

// PropagateDeploymentStatus copies the Deployment's availability into the
// Foo's status: available replicas and the DeploymentReady condition, which
// is True once the Deployment has rolled out its current spec and has the
// wanted replicas available, False when it reports that it cannot progress
// or lacks the minimum availability, and Unknown while it rolls out.
func (fs *FooStatus) PropagateDeploymentStatus(d *appsv1.Deployment) {
	fs.AvailableReplicas = d.Status.AvailableReplicas
	m := fooCondSet.Manage(fs)

	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse {
			m.MarkFalse(FooConditionDeploymentReady, ReasonDeploymentFailed, "%s", orReason(c.Message, c.Reason))
			return
		}
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			m.MarkFalse(FooConditionDeploymentReady, ReasonDeploymentFailed, "%s", orReason(c.Message, c.Reason))
			return
		}
	}
	switch {
	case d.Generation > d.Status.ObservedGeneration:
		m.MarkUnknown(FooConditionDeploymentReady, ReasonDeploymentRollingOut,
			"Deployment %q has not yet observed generation %d", d.Name, d.Generation)
	case d.Status.UpdatedReplicas < want || d.Status.Replicas > want || d.Status.AvailableReplicas < want:
		m.MarkUnknown(FooConditionDeploymentReady, ReasonDeploymentRollingOut,
			"%d of %d replicas available", d.Status.AvailableReplicas, want)
	default:
		m.MarkTrue(FooConditionDeploymentReady)
	}
}

func orReason(msg, reason string) string {
	if msg != "" {
		return msg
	}
	return fmt.Sprintf("Deployment reports %s", reason)
}
