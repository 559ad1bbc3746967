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

package serverlesstest_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgotesting "k8s.io/client-go/testing"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	rtesting "knative.dev/pkg/reconciler/testing"

	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
)

// withReady returns a source whose Ready condition has status and reason.
func withReady(status corev1.ConditionStatus, reason string) runtime.Object {
	s := &sourcesv1.ContainerSource{}
	s.Status.Conditions = duckv1.Conditions{{Type: apis.ConditionReady, Status: status, Reason: reason}}
	return s
}

func TestCheckSettled(t *testing.T) {
	rows := rtesting.TableTest{{
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{Object: withReady(corev1.ConditionFalse, "SpecInvalid")}},
	}, {
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{Object: withReady(corev1.ConditionUnknown, "RollingOut")}},
	}, {
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{Object: withReady(corev1.ConditionTrue, "Ready")}},
	}}
	if err := serverlesstest.CheckSettled([]string{"SpecInvalid", "RollingOut"}, rows); err != nil {
		t.Errorf("CheckSettled(reasons the rows set) = %v, want nil", err)
	}
	for _, reason := range []string{"SpecInvalidd", "Ready"} {
		err := serverlesstest.CheckSettled([]string{"SpecInvalid", reason}, rows)
		if err == nil || !strings.Contains(err.Error(), `Settled reason "`+reason+`"`) || strings.Contains(err.Error(), `"SpecInvalid"`) {
			t.Errorf("CheckSettled(%q) = %v, want an error naming it alone", reason, err)
		}
	}
}
