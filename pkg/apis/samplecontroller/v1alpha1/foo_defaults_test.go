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
	"testing"

	"github.com/google/go-cmp/cmp"
	"knative.dev/pkg/ptr"
)

func TestFooDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   FooSpec
		want FooSpec
	}{{
		name: "replicas left out",
		in:   FooSpec{DeploymentName: "d"},
		want: FooSpec{DeploymentName: "d", Replicas: ptr.Int32(1)},
	}, {
		name: "replicas zero is kept",
		in:   FooSpec{DeploymentName: "d", Replicas: ptr.Int32(0)},
		want: FooSpec{DeploymentName: "d", Replicas: ptr.Int32(0)},
	}, {
		name: "replicas set",
		in:   FooSpec{DeploymentName: "d", Replicas: ptr.Int32(3)},
		want: FooSpec{DeploymentName: "d", Replicas: ptr.Int32(3)},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &Foo{Spec: tc.in}
			f.SetDefaults(context.Background())
			if diff := cmp.Diff(tc.want, f.Spec); diff != "" {
				t.Error("SetDefaults (-want, +got):", diff)
			}
		})
	}
}
