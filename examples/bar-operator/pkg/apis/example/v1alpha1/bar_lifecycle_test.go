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

	corev1 "k8s.io/api/core/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
)

func TestBarIsKRShaped(t *testing.T) {
	var b duckv1.KRShaped = &Bar{}
	if got, want := b.GetConditionSet().GetTopLevelConditionType(), apis.ConditionReady; got != want {
		t.Errorf("top-level condition = %q, want %q", got, want)
	}
	if got, want := (&Bar{}).GetGroupVersionKind().String(), "example.frugal-operator.dev/v1alpha1, Kind=Bar"; got != want {
		t.Errorf("GetGroupVersionKind() = %q, want %q", got, want)
	}
}

func TestInitializeConditions(t *testing.T) {
	var s BarStatus
	s.InitializeConditions()
	for _, c := range []apis.ConditionType{BarConditionReady, BarConditionConfigMapReady} {
		if got := s.GetCondition(c); got == nil || !got.IsUnknown() {
			t.Errorf("condition %s = %v, want Unknown", c, got)
		}
	}
	if s.IsReady() {
		t.Error("IsReady() = true before any ConfigMap was written")
	}
}

func TestBarStatusTransitions(t *testing.T) {
	tests := []struct {
		name    string
		mark    func(*BarStatus)
		want    corev1.ConditionStatus
		reason  string
		message string
		cmName  string
	}{{
		name:   "configmap ready",
		mark:   func(s *BarStatus) { s.MarkConfigMapReady("settings") },
		want:   corev1.ConditionTrue,
		cmName: "settings",
	}, {
		name:    "configmap not owned",
		mark:    func(s *BarStatus) { s.MarkConfigMapNotOwned("settings") },
		want:    corev1.ConditionFalse,
		reason:  ReasonConfigMapNotOwned,
		message: `Resource "settings" already exists and is not managed by Bar`,
	}, {
		name:    "spec invalid",
		mark:    func(s *BarStatus) { s.MarkSpecInvalid("bad") },
		want:    corev1.ConditionFalse,
		reason:  ReasonSpecInvalid,
		message: "bad",
	}, {
		name: "ready again after not owned",
		mark: func(s *BarStatus) {
			s.MarkConfigMapNotOwned("settings")
			s.MarkConfigMapReady("settings")
		},
		want:   corev1.ConditionTrue,
		cmName: "settings",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A Bar that was Ready before: a failure must take the name away.
			var s BarStatus
			s.InitializeConditions()
			s.MarkConfigMapReady("previous")
			tc.mark(&s)
			for _, ct := range []apis.ConditionType{BarConditionConfigMapReady, BarConditionReady} {
				c := s.GetCondition(ct)
				if c.Status != tc.want || c.Reason != tc.reason || c.Message != tc.message {
					t.Errorf("%s = %s/%s/%q, want %s/%s/%q", ct, c.Status, c.Reason, c.Message, tc.want, tc.reason, tc.message)
				}
			}
			if s.ConfigMapName != tc.cmName {
				t.Errorf("ConfigMapName = %q, want %q", s.ConfigMapName, tc.cmName)
			}
			if got := s.IsReady(); got != (tc.want == corev1.ConditionTrue) {
				t.Errorf("IsReady() = %v", got)
			}
		})
	}
}
