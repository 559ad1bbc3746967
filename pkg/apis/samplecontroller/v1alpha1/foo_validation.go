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

	"k8s.io/apimachinery/pkg/util/validation"
	"knative.dev/pkg/apis"
)

// Validate implements apis.Validatable. The CRD's schema and CEL rules enforce
// the same at admission (there is no webhook); the reconciler calls this to
// refuse, with a clear reason, a Foo that reached it some other way.
func (f *Foo) Validate(ctx context.Context) *apis.FieldError {
	errs := f.Spec.Validate(ctx).ViaField("spec")
	if apis.IsInUpdate(ctx) {
		if orig, ok := apis.GetBaseline(ctx).(*Foo); ok && orig.Spec.DeploymentName != "" &&
			orig.Spec.DeploymentName != f.Spec.DeploymentName {
			errs = errs.Also(&apis.FieldError{
				Message: "Immutable field changed",
				Paths:   []string{"spec.deploymentName"},
				Details: "deploymentName cannot change once set: the old Deployment would be orphaned",
			})
		}
	}
	return errs
}

// Validate checks a FooSpec on its own.
func (fs *FooSpec) Validate(context.Context) *apis.FieldError {
	var errs *apis.FieldError
	if fs.DeploymentName == "" {
		errs = errs.Also(apis.ErrMissingField("deploymentName"))
	} else if msgs := validation.IsDNS1123Subdomain(fs.DeploymentName); len(msgs) > 0 {
		errs = errs.Also(apis.ErrInvalidValue(fs.DeploymentName, "deploymentName", strings.Join(msgs, "; ")))
	}
	if fs.Replicas != nil && *fs.Replicas < 0 {
		errs = errs.Also(apis.ErrInvalidValue(*fs.Replicas, "replicas", "must be greater than or equal to 0"))
	}
	return errs
}
