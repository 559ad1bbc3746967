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
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"knative.dev/pkg/apis"
)

const (
	// MaxDataKeys is the most keys a Bar's data may have.
	MaxDataKeys = 100
	// MaxDataBytes is the most bytes a Bar's data may take, keys and values
	// together: a quarter of what a ConfigMap may hold.
	MaxDataBytes = 256 << 10
)

// Validate implements apis.Validatable. The CRD's schema and CEL rules enforce
// the same at admission (there is no webhook); the reconciler calls this to
// refuse, with a clear reason, a Bar that reached it some other way.
func (b *Bar) Validate(ctx context.Context) *apis.FieldError {
	var errs *apis.FieldError
	// The name becomes a label value on the ConfigMap.
	if msgs := validation.IsValidLabelValue(b.Name); len(msgs) > 0 {
		errs = errs.Also(apis.ErrInvalidValue(b.Name, "metadata.name", strings.Join(msgs, "; ")))
	}
	return errs.Also(b.Spec.Validate(ctx).ViaField("spec"))
}

// Validate checks a BarSpec on its own.
func (bs *BarSpec) Validate(context.Context) *apis.FieldError {
	var errs *apis.FieldError
	if n := len(bs.Data); n > MaxDataKeys {
		errs = errs.Also(apis.ErrOutOfBoundsValue(n, 0, MaxDataKeys, "data"))
	}
	size := 0
	for _, k := range slices.Sorted(maps.Keys(bs.Data)) {
		size += len(k) + len(bs.Data[k])
		if msgs := validation.IsConfigMapKey(k); len(msgs) > 0 {
			errs = errs.Also(apis.ErrInvalidKeyName(k, "data", msgs...))
		}
	}
	if size > MaxDataBytes {
		errs = errs.Also(&apis.FieldError{
			Message: "data too large",
			Paths:   []string{"data"},
			Details: fmt.Sprintf("its keys and values take %d bytes, more than %d", size, MaxDataBytes),
		})
	}
	return errs
}
