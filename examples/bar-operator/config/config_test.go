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

// Package config holds the example's manifests; its test checks the CRD's
// schema and CEL rules against the sample and against Bar.Validate, and the
// sources against bar.Operator.
package config

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	examplev1alpha1 "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/apis/example/v1alpha1"
	"github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/reconciler/bar"
	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
)

// TestBarSchemaMatchesTheTypes admits the sample, and Bars made in Go, as
// the API server would (schema, then CEL rules): what Bar.Validate accepts
// the CRD accepts, and what it rejects, the CRD rejects, but for the one gap
// 300-bar.yaml explains.
func TestBarSchemaMatchesTheTypes(t *testing.T) {
	ctx := context.Background()
	var crd apiextensionsv1.CustomResourceDefinition
	decodeStrict(t, "300-bar.yaml", &crd)
	crd.Status.StoredVersions = []string{"v1alpha1"} // the API server's to set
	in := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&crd, in, nil); err != nil {
		t.Fatal(err)
	}
	// This also compiles the CEL rules and checks their estimated cost.
	if errs := crdvalidation.ValidateCustomResourceDefinition(ctx, in); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	// The conversion lifts the only version's schema to spec.validation.
	schemaValidator, _, err := validation.NewSchemaValidator(in.Spec.Validation.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(in.Spec.Validation.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	celValidator := cel.NewValidator(structural, true, celconfig.PerCallLimit)

	sample := &examplev1alpha1.Bar{}
	decodeStrict(t, "samples/example-bar.yaml", sample)
	bar := func(name string, data map[string]string) *examplev1alpha1.Bar {
		b := sample.DeepCopy()
		b.Name, b.Spec.Data = name, data
		return b
	}
	keys := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m["k"+strconv.Itoa(i)] = "v"
		}
		return m
	}
	tests := []struct {
		name     string
		bar      *examplev1alpha1.Bar
		valid    bool // by Bar.Validate
		admitted bool // by the CRD
	}{
		{"sample", sample, true, true},
		{"no data", bar("b", nil), true, true},
		{"empty data", bar("b", map[string]string{}), true, true},
		{"most keys", bar("b", keys(examplev1alpha1.MaxDataKeys)), true, true},
		{"too many keys", bar("b", keys(examplev1alpha1.MaxDataKeys+1)), false, false},
		{"key with a slash", bar("b", map[string]string{"a/b": "1"}), false, false},
		{"key dot", bar("b", map[string]string{".": "1"}), false, false},
		{"key dot-dot", bar("b", map[string]string{"..a": "1"}), false, false},
		{"longest key", bar("b", map[string]string{strings.Repeat("k", 253): "1"}), true, true},
		{"key too long", bar("b", map[string]string{strings.Repeat("k", 254): "1"}), false, false},
		{"largest data", bar("b", map[string]string{"a": strings.Repeat("x", examplev1alpha1.MaxDataBytes-1)}), true, true},
		{"data too large", bar("b", map[string]string{"a": strings.Repeat("x", examplev1alpha1.MaxDataBytes)}), false, false},
		{"keys count", bar("b", map[string]string{"aa": strings.Repeat("x", examplev1alpha1.MaxDataBytes-1)}), false, false},
		{"too large only in bytes", bar("b", map[string]string{"a": strings.Repeat("é", examplev1alpha1.MaxDataBytes/2)}), false, true},
		{"name too long", bar(strings.Repeat("b", 64), nil), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.bar.Validate(ctx) == nil; got != tc.valid {
				t.Fatalf("Bar.Validate() valid = %v, want %v", got, tc.valid)
			}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tc.bar)
			if err != nil {
				t.Fatal(err)
			}
			res := schemaValidator.Validate(u)
			celErrs, _ := celValidator.Validate(ctx, nil, structural, u, nil, celconfig.RuntimeCELCostBudget)
			if got := res.IsValid() && len(celErrs) == 0; got != tc.admitted {
				t.Errorf("CRD admits it = %v, want %v: schema: %v; CEL: %v", got, tc.admitted, res.Errors, celErrs)
			}
		})
	}
}

// decodeStrict decodes a single-document manifest into v, failing on unknown
// fields: a misspelt field would otherwise be dropped silently.
func decodeStrict(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: does not decode into %T: %v", file, v, err)
	}
}

// TestTheSourcesSendWhatTheOperatorNames checks 600-sources.yaml's one
// fail-fast ApiServerSource against bar.Operator's kinds.
func TestTheSourcesSendWhatTheOperatorNames(t *testing.T) {
	if err := serverlesstest.CheckSourcesFile(bar.Operator, "600-sources.yaml"); err != nil {
		t.Error(err)
	}
}
