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
	"context"
	"strings"
	"testing"

	"knative.dev/pkg/apis"
	"knative.dev/pkg/ptr"
)

func TestFooValidate(t *testing.T) {
	tests := []struct {
		name     string
		spec     FooSpec
		baseline *Foo // set for updates
		want     string
	}{{
		name: "valid",
		spec: FooSpec{DeploymentName: "web", Replicas: ptr.Int32(2)},
	}, {
		name: "zero replicas",
		spec: FooSpec{DeploymentName: "web", Replicas: ptr.Int32(0)},
	}, {
		name: "dotted name",
		spec: FooSpec{DeploymentName: "web.v1"},
	}, {
		name: "missing name",
		spec: FooSpec{},
		want: "missing field(s): spec.deploymentName",
	}, {
		name: "name not DNS-1123",
		spec: FooSpec{DeploymentName: "Web_1"},
		want: "invalid value: Web_1: spec.deploymentName",
	}, {
		name: "negative replicas",
		spec: FooSpec{DeploymentName: "web", Replicas: ptr.Int32(-1)},
		want: "invalid value: -1: spec.replicas",
	}, {
		name:     "name changed on update",
		spec:     FooSpec{DeploymentName: "other"},
		baseline: &Foo{Spec: FooSpec{DeploymentName: "web"}},
		want:     "Immutable field changed: spec.deploymentName",
	}, {
		name:     "name kept on update",
		spec:     FooSpec{DeploymentName: "web", Replicas: ptr.Int32(9)},
		baseline: &Foo{Spec: FooSpec{DeploymentName: "web"}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.baseline != nil {
				ctx = apis.WithinUpdate(ctx, tc.baseline)
			}
			err := (&Foo{Spec: tc.spec}).Validate(ctx)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want it to start with %q", err, tc.want)
			}
		})
	}
}
