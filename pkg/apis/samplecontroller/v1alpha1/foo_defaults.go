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

	"k8s.io/utils/ptr"
)

// DefaultReplicas is the number of replicas of a Foo that does not say.
const DefaultReplicas int32 = 1

// SetDefaults implements apis.Defaultable. The CRD's schema applies the same
// default at admission; this keeps objects built in Go consistent with it.
func (f *Foo) SetDefaults(ctx context.Context) {
	f.Spec.SetDefaults(ctx)
}

// SetDefaults fills in the fields of a FooSpec that were left out.
func (fs *FooSpec) SetDefaults(context.Context) {
	if fs.Replicas == nil {
		fs.Replicas = ptr.To(DefaultReplicas)
	}
}
