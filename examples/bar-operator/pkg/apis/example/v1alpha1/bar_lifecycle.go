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

import "knative.dev/pkg/apis"

const (
	// BarConditionReady is True when the Bar's ConfigMap holds its data.
	BarConditionReady = apis.ConditionReady

	// BarConditionConfigMapReady reflects the state of the Bar's ConfigMap.
	BarConditionConfigMapReady apis.ConditionType = "ConfigMapReady"
)

// Reasons of the ConfigMapReady condition.
const (
	// ReasonConfigMapNotOwned: a ConfigMap of the Bar's name exists and
	// another controller (or none) manages it.
	ReasonConfigMapNotOwned = "ConfigMapNotOwned"
	// ReasonSpecInvalid: the Bar's spec fails validation (which admission
	// normally prevents), so no ConfigMap can be made of it.
	ReasonSpecInvalid = "SpecInvalid"
)

var barCondSet = apis.NewLivingConditionSet(BarConditionConfigMapReady)

// GetConditionSet implements duckv1.KRShaped.
func (*Bar) GetConditionSet() apis.ConditionSet {
	return barCondSet
}

// InitializeConditions sets every condition the Bar has to Unknown.
func (bs *BarStatus) InitializeConditions() {
	barCondSet.Manage(bs).InitializeConditions()
}

// GetCondition returns the condition of the given type, or nil.
func (bs *BarStatus) GetCondition(t apis.ConditionType) *apis.Condition {
	return barCondSet.Manage(bs).GetCondition(t)
}

// IsReady tells whether the Bar's Ready condition is True.
func (bs *BarStatus) IsReady() bool {
	return barCondSet.Manage(bs).IsHappy()
}

// MarkConfigMapReady records that the named ConfigMap holds the Bar's
// current data.
func (bs *BarStatus) MarkConfigMapReady(name string) {
	bs.ConfigMapName = name
	barCondSet.Manage(bs).MarkTrue(BarConditionConfigMapReady)
}

// MarkConfigMapNotOwned records that the ConfigMap the Bar would publish to
// exists and is not controlled by this Bar.
func (bs *BarStatus) MarkConfigMapNotOwned(name string) {
	bs.ConfigMapName = ""
	barCondSet.Manage(bs).MarkFalse(BarConditionConfigMapReady, ReasonConfigMapNotOwned,
		"Resource %q already exists and is not managed by Bar", name)
}

// MarkSpecInvalid records that no ConfigMap can be made of the Bar's spec.
// A ConfigMap written for an earlier spec may remain; it no longer holds the
// Bar's data, so ConfigMapName is cleared.
func (bs *BarStatus) MarkSpecInvalid(msg string) {
	bs.ConfigMapName = ""
	barCondSet.Manage(bs).MarkFalse(BarConditionConfigMapReady, ReasonSpecInvalid, "%s", msg)
}
