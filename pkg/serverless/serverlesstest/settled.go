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

package serverlesstest

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	rtesting "knative.dev/pkg/reconciler/testing"
)

// CheckSettled tells which of settled (an operator's Parts.Settled) no row
// of rows, the reconciler's TableTest, sets as the reason of an owner's
// Ready condition when not True, in the status updates the row wants: a
// reason misspelt, or copied from an upstream constant that the owner does
// not use, would never match, and the updates it was to skip would be
// reconciled.
func CheckSettled(settled []string, rows rtesting.TableTest) error {
	set := map[string]bool{}
	for _, row := range rows {
		for _, u := range row.WantStatusUpdates {
			if reason, ok := notReadyReason(u.GetObject()); ok {
				set[reason] = true
			}
		}
	}
	var errs []error
	for _, reason := range settled {
		if !set[reason] {
			errs = append(errs, fmt.Errorf("Settled reason %q: no row's status update sets it on a Ready condition that is not True", reason))
		}
	}
	return errors.Join(errs...)
}

// notReadyReason returns the reason of obj's Ready condition, if it is there
// and not True.
func notReadyReason(obj runtime.Object) (string, bool) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", false
	}
	conditions, _, _ := unstructured.NestedSlice(u, "status", "conditions")
	for _, c := range conditions {
		c, _ := c.(map[string]any)
		if c["type"] == "Ready" && c["status"] != "True" {
			reason, ok := c["reason"].(string)
			return reason, ok
		}
	}
	return "", false
}
