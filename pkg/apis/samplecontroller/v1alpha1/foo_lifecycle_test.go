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
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"knative.dev/pkg/ptr"
)

func TestFooIsKRShaped(t *testing.T) {
	var f duckv1.KRShaped = &Foo{}
	if got, want := f.GetConditionSet().GetTopLevelConditionType(), apis.ConditionReady; got != want {
		t.Errorf("top-level condition = %q, want %q", got, want)
	}
	if got, want := (&Foo{}).GetGroupVersionKind().String(), "samplecontroller.knative.io/v1alpha1, Kind=Foo"; got != want {
		t.Errorf("GetGroupVersionKind() = %q, want %q", got, want)
	}
}

func TestInitializeConditions(t *testing.T) {
	var s FooStatus
	s.InitializeConditions()
	for _, c := range []apis.ConditionType{FooConditionReady, FooConditionDeploymentReady} {
		if got := s.GetCondition(c); got == nil || !got.IsUnknown() {
			t.Errorf("condition %s = %v, want Unknown", c, got)
		}
	}
}

func TestPropagateDeploymentStatus(t *testing.T) {
	deployment := func(replicas int32, st appsv1.DeploymentStatus) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.Int32(replicas)},
			Status:     st,
		}
	}
	tests := []struct {
		name      string
		d         *appsv1.Deployment
		want      corev1.ConditionStatus
		reason    string
		available int32
	}{{
		name:      "available",
		d:         deployment(2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}),
		want:      corev1.ConditionTrue,
		available: 2,
	}, {
		name: "zero replicas asked, zero available",
		d:    deployment(0, appsv1.DeploymentStatus{ObservedGeneration: 2}),
		want: corev1.ConditionTrue,
	}, {
		name:   "new generation not observed",
		d:      deployment(2, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}),
		want:   corev1.ConditionUnknown,
		reason: ReasonDeploymentRollingOut, available: 2,
	}, {
		name:   "some available",
		d:      deployment(3, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 1}),
		want:   corev1.ConditionUnknown,
		reason: ReasonDeploymentRollingOut, available: 1,
	}, {
		name:   "old replicas still running",
		d:      deployment(2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 3}),
		want:   corev1.ConditionUnknown,
		reason: ReasonDeploymentRollingOut, available: 3,
	}, {
		name: "progress deadline exceeded",
		d: deployment(2, appsv1.DeploymentStatus{ObservedGeneration: 2, Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded",
		}}}),
		want:   corev1.ConditionFalse,
		reason: ReasonDeploymentFailed,
	}, {
		name: "replica failure",
		d: deployment(2, appsv1.DeploymentStatus{ObservedGeneration: 2, Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota exceeded",
		}}}),
		want:   corev1.ConditionFalse,
		reason: ReasonDeploymentFailed,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s FooStatus
			s.InitializeConditions()
			s.PropagateDeploymentStatus(tc.d)
			for _, ct := range []apis.ConditionType{FooConditionDeploymentReady, FooConditionReady} {
				c := s.GetCondition(ct)
				if c.Status != tc.want || c.Reason != tc.reason {
					t.Errorf("%s = %s/%s, want %s/%s", ct, c.Status, c.Reason, tc.want, tc.reason)
				}
			}
			if s.AvailableReplicas != tc.available {
				t.Errorf("AvailableReplicas = %d, want %d", s.AvailableReplicas, tc.available)
			}
			if got := s.IsReady(); got != (tc.want == corev1.ConditionTrue) {
				t.Errorf("IsReady() = %v", got)
			}
		})
	}
}

func TestMarkDeploymentNotOwned(t *testing.T) {
	s := FooStatus{AvailableReplicas: 3}
	s.InitializeConditions()
	s.MarkDeploymentNotOwned("web")
	c := s.GetCondition(FooConditionReady)
	if c.Status != corev1.ConditionFalse || c.Reason != ReasonDeploymentNotOwned ||
		c.Message != `Resource "web" already exists and is not managed by Foo` {
		t.Errorf("Ready = %+v", c)
	}
	if s.AvailableReplicas != 0 {
		t.Errorf("AvailableReplicas = %d, want 0: the Deployment is not this Foo's", s.AvailableReplicas)
	}
}

func TestMarkSpecInvalid(t *testing.T) {
	var s FooStatus
	s.MarkSpecInvalid("bad")
	if c := s.GetCondition(FooConditionReady); c.Status != corev1.ConditionFalse || c.Reason != ReasonSpecInvalid || c.Message != "bad" {
		t.Errorf("Ready = %+v", c)
	}
}
