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

package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"knative.dev/pkg/version"
	"sigs.k8s.io/yaml"
)

// The oldest versions the release is for. docs/install.md states them, as
// "Kubernetes 1.N or later" and "Knative 1.N or later", and so may the
// README and the other docs, always with these numbers
// (TestTheDocsStateTheMinimumVersions).
const (
	minKubernetes = "1.34"
	minKnative    = "1.23"
)

// released are the manifests a release carries (hack/release.sh), from this
// folder: the operator, its scale-out Role, its Component, the stream and
// the example Bar operator with its Component.
var released = []string{"*.yaml", "scale-out/*.yaml", "stream/*.yaml", "../stream/*.yaml", "../examples/bar-operator/config/*.yaml", "../examples/bar-operator/config/stream/*.yaml"}

// crdFieldsSince is each field a CustomResourceDefinition of the release
// sets, by the Kubernetes version from which an API server serves it without
// a feature gate to turn on. "<schema>" stands for any node of the schema.
// A field missing here fails TestTheCRDsNeedNoNewerKubernetes: add it with
// its version and source.
var crdFieldsSince = []struct {
	version, source string
	fields          []string
}{{
	// apiextensions.k8s.io/v1 is GA from Kubernetes 1.16 (KEP-95); its
	// defaults ("default") from 1.16 too, where the CustomResourceDefaulting
	// gate is beta and on (GA in 1.17).
	"1.16", "apiextensions.k8s.io/v1",
	[]string{
		"apiVersion", "kind",
		"spec.group", "spec.scope",
		"spec.names.kind", "spec.names.listKind", "spec.names.plural", "spec.names.singular", "spec.names.categories",
		"spec.versions[].name", "spec.versions[].served", "spec.versions[].storage",
		"spec.versions[].subresources.status",
		"spec.versions[].additionalPrinterColumns[].name", "spec.versions[].additionalPrinterColumns[].type",
		"spec.versions[].additionalPrinterColumns[].jsonPath", "spec.versions[].additionalPrinterColumns[].priority",
		"spec.versions[].additionalPrinterColumns[].description", "spec.versions[].additionalPrinterColumns[].format",
		"<schema>.type", "<schema>.description", "<schema>.required", "<schema>.properties", "<schema>.items",
		"<schema>.additionalProperties", "<schema>.format", "<schema>.default", "<schema>.enum", "<schema>.pattern",
		"<schema>.minimum", "<schema>.maximum", "<schema>.minLength", "<schema>.maxLength", "<schema>.minItems", "<schema>.maxItems",
		"<schema>.minProperties", "<schema>.maxProperties", "<schema>.nullable", "<schema>.x-kubernetes-preserve-unknown-fields",
	},
}, {
	// CEL validation rules, transition rules (oldSelf) among them: the
	// CustomResourceValidationExpressions gate is alpha in 1.23, beta and on
	// in 1.25, GA in 1.29 (KEP-2876).
	"1.25", "CEL validation rules",
	[]string{"<schema>.x-kubernetes-validations[].rule", "<schema>.x-kubernetes-validations[].message"},
}, {
	// The CustomResourceFieldSelectors gate is alpha in 1.30, beta and on in
	// 1.31, GA in 1.32 (KEP-4358; k8s.io/apiextensions-apiserver/pkg/features,
	// kube_features.go). On 1.30 the API server drops the field, and the
	// reconciler's field selector on .spec.deploymentName is refused.
	"1.31", "selectable fields",
	[]string{"spec.versions[].selectableFields[].jsonPath"},
}}

// knativeKeysSince is each Knative annotation, label or field the release's
// manifests name, by the Knative release (knative-v1.N tags of
// knative/serving and knative/eventing) from which it works without a
// feature flag to turn on.
var knativeKeysSince = map[string]string{
	// Eventing: the adapter pod's labels (pkg/reconciler/apiserversource/
	// resources/labels.go) and the Broker's class, in knative-v1.0.0.
	"eventing.knative.dev/source":       "1.0",
	"eventing.knative.dev/sourceName":   "1.0",
	"eventing.knative.dev/broker.class": "1.0",
	// Serving: the visibility label (knative.dev/networking's
	// VisibilityLabelKey) in knative-v1.0.0; the autoscaling annotations in
	// their kebab-case spelling from knative-v1.1.0
	// (pkg/apis/autoscaling/register.go).
	"networking.knative.dev/visibility":                          "1.0",
	"autoscaling.knative.dev/window":                             "1.0",
	"autoscaling.knative.dev/min-scale":                          "1.1",
	"autoscaling.knative.dev/max-scale":                          "1.1",
	"autoscaling.knative.dev/scale-to-zero-pod-retention-period": "1.1",
	// Trigger filters: the field is in knative-v1.9.0, its feature flag
	// new-trigger-filters on by default from knative-v1.12.0
	// (config/core/configmaps/features.yaml).
	"Trigger spec.filters": "1.12",
	// The InMemoryChannel's asynchronous handler, copied from the Broker's
	// annotation (pkg/apis/messaging/v1/in_memory_channel_types.go), from
	// knative-v1.17.0.
	"messaging.knative.dev/async-handler": "1.17",
	// The ApiServerSource's fail-fast mode
	// (pkg/reconciler/apiserversource/apiserversource.go), from
	// knative-v1.19.0.
	"features.knative.dev/apiserversource-skip-permissions-check": "1.19",
}

// minor parses "1.N" (or "v1.N.P") into N.
func minor(t *testing.T, v string) int {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 || parts[0] != "1" {
		t.Fatalf("version %q is not 1.N", v)
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		t.Fatalf("version %q: %v", v, err)
	}
	return n
}

// crdFields returns the path of every field set in the CRD obj: a value
// that is not a map or a list of maps, or an empty map (subresources.status).
// The nodes of the schema are named "<schema>" whatever their place.
func crdFields(obj map[string]any) []string {
	var out []string
	var walk func(path string, v any)
	var schema func(node map[string]any)
	schema = func(node map[string]any) {
		for k, v := range node {
			p := "<schema>." + k
			switch k {
			case "properties":
				out = append(out, p)
				for _, prop := range v.(map[string]any) {
					schema(prop.(map[string]any))
				}
			case "items", "additionalProperties":
				out = append(out, p)
				if m, ok := v.(map[string]any); ok {
					schema(m)
				}
			default:
				walk(p, v)
			}
		}
	}
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if path == "spec.versions[].schema.openAPIV3Schema" {
				schema(v)
				return
			}
			if len(v) == 0 {
				out = append(out, path)
			}
			for k, e := range v {
				walk(strings.TrimPrefix(path+"."+k, "."), e)
			}
		case []any:
			if len(v) > 0 {
				if _, ok := v[0].(map[string]any); ok {
					for _, e := range v {
						walk(path+"[]", e)
					}
					return
				}
			}
			out = append(out, path)
		default:
			out = append(out, path)
		}
	}
	for k, v := range obj {
		if k != "metadata" && k != "status" {
			walk(k, v)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// TestTheCRDsNeedNoNewerKubernetes: every field the release's CRDs set is
// served by default by Kubernetes minKubernetes, and minKubernetes is not
// older than what Knative, which the release runs on, requires.
func TestTheCRDsNeedNoNewerKubernetes(t *testing.T) {
	since := map[string]string{}
	for _, g := range crdFieldsSince {
		for _, f := range g.fields {
			since[f] = g.version
		}
	}
	crds := 0
	for _, glob := range released {
		for file, ds := range docs(t, glob) {
			for _, doc := range ds {
				if kindOf(t, doc) != "apiextensions.k8s.io/v1/CustomResourceDefinition" {
					continue
				}
				crds++
				var obj map[string]any
				if err := yaml.Unmarshal(doc, &obj); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				for _, f := range crdFields(obj) {
					v, ok := since[f]
					switch {
					case !ok:
						t.Errorf("%s: field %s: from which Kubernetes version is it served by default? Add it to crdFieldsSince", file, f)
					case minor(t, v) > minor(t, minKubernetes):
						t.Errorf("%s: field %s needs Kubernetes %s, newer than the minimum, %s", file, f, v, minKubernetes)
					}
				}
			}
		}
	}
	if crds < 2 {
		t.Fatalf("found %d CRDs in %v, want the Foo's and the Bar's", crds, released)
	}
	// knative.dev/pkg is pinned at the commit Eventing v0.50.0 (Knative
	// 1.23) pins: its controllers refuse to start on an older Kubernetes.
	if minor(t, minKubernetes) < minor(t, version.DefaultKubernetesMinVersion) {
		t.Errorf("minimum Kubernetes %s is older than Knative's own minimum, %s", minKubernetes, version.DefaultKubernetesMinVersion)
	}
}

// knativeKeys returns the Knative annotation and label keys (any map key in
// a *.knative.dev group) that obj names, and "Trigger spec.filters" for a
// Trigger with filters.
func knativeKeys(obj map[string]any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if group, _, ok := strings.Cut(k, "/"); ok && strings.HasSuffix(group, ".knative.dev") {
					out = append(out, k)
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(obj)
	if spec, ok := obj["spec"].(map[string]any); ok && obj["kind"] == "Trigger" && spec["filters"] != nil {
		out = append(out, "Trigger spec.filters")
	}
	return out
}

// TestTheManifestsNeedNoNewerKnative: every Knative annotation, label and
// feature the release's manifests name works on Knative minKnative without
// a feature flag, and minKnative is not newer than the Knative the
// one-node cluster's suite runs (hack/build-tools.sh's EVENTING_VERSION
// v0.N is Knative 1.(N-27)).
func TestTheManifestsNeedNoNewerKnative(t *testing.T) {
	seen := 0
	for _, glob := range released {
		for file, ds := range docs(t, glob) {
			for _, doc := range ds {
				var obj map[string]any
				if err := yaml.Unmarshal(doc, &obj); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				for _, k := range knativeKeys(obj) {
					seen++
					v, ok := knativeKeysSince[k]
					switch {
					case !ok:
						t.Errorf("%s: %s: from which Knative version does it work by default? Add it to knativeKeysSince", file, k)
					case minor(t, v) > minor(t, minKnative):
						t.Errorf("%s: %s needs Knative %s, newer than the minimum, %s", file, k, v, minKnative)
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("the manifests name no Knative annotation, label or feature: is the scan broken?")
	}
	b, err := os.ReadFile("../hack/build-tools.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^EVENTING_VERSION=v0\.(\d+)\.\d+$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("hack/build-tools.sh sets no EVENTING_VERSION=v0.N.P")
	}
	n, _ := strconv.Atoi(string(m[1]))
	if tested := fmt.Sprintf("1.%d", n-27); minor(t, minKnative) > minor(t, tested) {
		t.Errorf("minimum Knative %s is newer than the one tested, %s", minKnative, tested)
	}
}

// TestTheDocsStateTheMinimumVersions: docs/install.md states both minimums,
// and no doc names another as the minimum.
func TestTheDocsStateTheMinimumVersions(t *testing.T) {
	files, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "../docs/install.md") {
		t.Fatal("there is no docs/install.md")
	}
	files = append(files, "../README.md", "../DEVELOPMENT.md")
	for _, c := range []struct{ name, want string }{{"Kubernetes", minKubernetes}, {"Knative", minKnative}} {
		re := regexp.MustCompile(c.name + `\s+v?(1\.\d+)(?:\.\d+)?\s+or\s+later`)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			found := re.FindAllSubmatch(b, -1)
			for _, m := range found {
				if string(m[1]) != c.want {
					t.Errorf("%s says %q; the minimum is %s %s (config/versions_test.go)", f, m[0], c.name, c.want)
				}
			}
			if filepath.Base(f) == "install.md" && len(found) == 0 {
				t.Errorf("%s does not state the minimum as %q", f, c.name+" "+c.want+" or later")
			}
		}
	}
}
