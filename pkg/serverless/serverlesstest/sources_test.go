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
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"

	"github.com/frugal-operator/foo-operator/pkg/serverless"
	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
)

var op = serverless.Operator{
	Owner: serverless.Kind{Resource: schema.GroupVersionResource{Group: "samplecontroller.knative.io", Version: "v1alpha1", Resource: "foos"}, Kind: "Foo"},
	Owned: []serverless.Owned{
		{Kind: serverless.Kind{Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment"}, OwnerLabel: "foo"},
		{Kind: serverless.Kind{Resource: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Kind: "Service"}},
	},
}

var (
	foos        = sourcesv1.APIVersionKindSelector{APIVersion: "samplecontroller.knative.io/v1alpha1", Kind: "Foo"}
	deployments = sourcesv1.APIVersionKindSelector{APIVersion: "apps/v1", Kind: "Deployment", LabelSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "foo", Operator: metav1.LabelSelectorOpExists}}}}
	services = sourcesv1.APIVersionKindSelector{APIVersion: "v1", Kind: "Service"}
	pods     = func(source string) sourcesv1.APIVersionKindSelector {
		return sourcesv1.APIVersionKindSelector{APIVersion: "v1", Kind: "Pod", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
			"eventing.knative.dev/source": "apiserver-source-controller", "eventing.knative.dev/sourceName": source}}}
	}
)

func source(name string, resources ...sourcesv1.APIVersionKindSelector) *sourcesv1.ApiServerSource {
	return &sourcesv1.ApiServerSource{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: sourcesv1.ApiServerSourceSpec{Resources: resources}}
}

func TestCheckSources(t *testing.T) {
	if err := serverlesstest.CheckSources(op, source("foos", foos, deployments, services, pods("foos"))); err != nil {
		t.Errorf("CheckSources(one source of every kind) = %v, want nil", err)
	}
	if err := serverlesstest.CheckSources(op, source("a", foos, pods("a")), source("b", deployments, services, pods("b"))); err != nil {
		t.Errorf("CheckSources(two sources) = %v, want nil", err)
	}
	everyDeployment := deployments
	everyDeployment.LabelSelector = nil
	tests := []struct {
		name    string
		sources []*sourcesv1.ApiServerSource
		want    string
	}{{
		name:    "an owned kind not watched",
		sources: []*sourcesv1.ApiServerSource{source("foos", foos, deployments, pods("foos"))},
		want:    "no ApiServerSource watches v1 Service",
	}, {
		name:    "every Deployment",
		sources: []*sourcesv1.ApiServerSource{source("foos", foos, everyDeployment, services, pods("foos"))},
		want:    "ApiServerSource foos watches every apps/v1 Deployment, not only those labelled foo",
	}, {
		name:    "a kind not named",
		sources: []*sourcesv1.ApiServerSource{source("foos", foos, deployments, services, pods("foos"), sourcesv1.APIVersionKindSelector{APIVersion: "v1", Kind: "Secret"})},
		want:    "ApiServerSource foos watches v1 Secret, which the operator does not name",
	}, {
		name:    "no adapter's pod",
		sources: []*sourcesv1.ApiServerSource{source("foos", foos, deployments, services)},
		want:    "ApiServerSource foos does not watch its adapter's pod",
	}, {
		name:    "another source's adapter's pod",
		sources: []*sourcesv1.ApiServerSource{source("foos", foos, deployments, services, pods("bars"))},
		want:    "ApiServerSource foos watches v1 Pod, which the operator does not name",
	}}
	ownedOnly := source("foos", foos, deployments, services, pods("foos"))
	ownedOnly.Spec.ResourceOwner = &sourcesv1.APIVersionKind{APIVersion: "samplecontroller.knative.io/v1alpha1", Kind: "Foo"}
	tests = append(tests, struct {
		name    string
		sources []*sourcesv1.ApiServerSource
		want    string
	}{"owners filtered out", []*sourcesv1.ApiServerSource{ownedOnly}, "ApiServerSource foos passes only owned objects, so none of samplecontroller.knative.io/v1alpha1 Foo, which the operator does not own"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := serverlesstest.CheckSources(op, tc.sources...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckSources() = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// A tracked kind is watched like the others, every object of it: the
// owners track objects they do not label.
func TestCheckSourcesOfTrackedKinds(t *testing.T) {
	tracking := op
	tracking.Tracked = []serverless.Kind{{Resource: schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}, Kind: "Service"}}
	kservices := sourcesv1.APIVersionKindSelector{APIVersion: "serving.knative.dev/v1", Kind: "Service"}
	if err := serverlesstest.CheckSources(tracking, source("foos", foos, deployments, services, kservices, pods("foos"))); err != nil {
		t.Errorf("CheckSources(every kind, the tracked one too) = %v, want nil", err)
	}
	ownedOnly := source("foos", foos, deployments, services, kservices, pods("foos"))
	ownedOnly.Spec.ResourceOwner = &sourcesv1.APIVersionKind{APIVersion: "samplecontroller.knative.io/v1alpha1", Kind: "Foo"}
	for _, tc := range []struct {
		name    string
		sources []*sourcesv1.ApiServerSource
		want    string
	}{
		{"the tracked kind not watched", []*sourcesv1.ApiServerSource{source("foos", foos, deployments, services, pods("foos"))},
			"no ApiServerSource watches serving.knative.dev/v1 Service"},
		{"tracked objects filtered out", []*sourcesv1.ApiServerSource{ownedOnly},
			"so none of serving.knative.dev/v1 Service, which the operator does not own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := serverlesstest.CheckSources(tracking, tc.sources...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckSources() = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// An operator that follows its configuration has its sources watch the
// ConfigMaps labelled for it, and only those.
func TestCheckSourcesOfTheConfiguration(t *testing.T) {
	following := op
	following.Name, following.FollowConfig = "foo-reconciler", true
	configMaps := func(value string) sourcesv1.APIVersionKindSelector {
		return sourcesv1.APIVersionKindSelector{APIVersion: "v1", Kind: "ConfigMap", LabelSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{serverless.ConfigLabel: value}}}
	}
	if err := serverlesstest.CheckSources(following, source("foos", foos, deployments, services, configMaps("foo-reconciler"), pods("foos"))); err != nil {
		t.Errorf("CheckSources(every kind, the ConfigMaps too) = %v, want nil", err)
	}
	if err := serverlesstest.CheckSources(op, source("foos", foos, deployments, services, configMaps(""), pods("foos"))); err == nil ||
		!strings.Contains(err.Error(), "watches v1 ConfigMap, which the operator does not name") {
		t.Errorf("CheckSources(ConfigMaps of an operator that does not follow them) = %v, want them refused", err)
	}
	for _, tc := range []struct {
		name    string
		sources []*sourcesv1.ApiServerSource
		want    string
	}{
		{"not watched", []*sourcesv1.ApiServerSource{source("foos", foos, deployments, services, pods("foos"))},
			"no ApiServerSource watches its ConfigMaps (v1 ConfigMap labelled serverless.frugal-operator.dev/configures=foo-reconciler)"},
		{"another operator's", []*sourcesv1.ApiServerSource{source("foos", foos, deployments, services, configMaps("bar-reconciler"), pods("foos"))},
			"ApiServerSource foos watches v1 ConfigMap, which the operator does not name"},
		{"every ConfigMap", []*sourcesv1.ApiServerSource{source("foos", foos, deployments, services, pods("foos"),
			sourcesv1.APIVersionKindSelector{APIVersion: "v1", Kind: "ConfigMap"})},
			"ApiServerSource foos watches v1 ConfigMap, which the operator does not name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := serverlesstest.CheckSources(following, tc.sources...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckSources() = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// SourcesIn decodes the ApiServerSources of a file, strictly, and leaves
// its other documents alone.
func TestSourcesIn(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.yaml", `# a comment
apiVersion: sources.knative.dev/v1
kind: ApiServerSource
metadata:
  name: foos
spec:
  mode: Resource
  resources:
  - apiVersion: v1
    kind: Pod
---
apiVersion: sources.knative.dev/v1
kind: PingSource
metadata:
  name: resync
spec:
  schedule: "0 * * * *"
`)
	sources, err := serverlesstest.SourcesIn(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) != 1 || sources[0].Name != "foos" || len(sources[0].Spec.Resources) != 1 || sources[0].Spec.Resources[0].Kind != "Pod" {
		t.Errorf("SourcesIn = %+v, want the one ApiServerSource foos watching Pods", sources)
	}
	bad := write("bad.yaml", "apiVersion: sources.knative.dev/v1\nkind: ApiServerSource\nmetadata:\n  name: foos\nspec:\n  resourcez: []\n")
	if _, err := serverlesstest.SourcesIn(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "resourcez") {
		t.Errorf("SourcesIn(a field ApiServerSource has not) = %v, want an error naming the file and the field", err)
	}
}

// CheckSourcesFile wants one ApiServerSource, in fail-fast mode, sending
// what the operator names.
func TestCheckSourcesFile(t *testing.T) {
	dir := t.TempDir()
	source := func(name string, failFast bool) string {
		annotations := ""
		if failFast {
			annotations = "\n  annotations:\n    " + serverlesstest.FailFastAnnotation + ": \"true\""
		}
		return `apiVersion: sources.knative.dev/v1
kind: ApiServerSource
metadata:
  name: ` + name + annotations + `
spec:
  resources:
  - {apiVersion: samplecontroller.knative.io/v1alpha1, kind: Foo}
  - {apiVersion: apps/v1, kind: Deployment, selector: {matchExpressions: [{key: foo, operator: Exists}]}}
  - {apiVersion: v1, kind: Service}
  - {apiVersion: v1, kind: Pod, selector: {matchLabels: {eventing.knative.dev/source: apiserver-source-controller, eventing.knative.dev/sourceName: ` + name + `}}}
`
	}
	for _, tc := range []struct {
		name, text, want string
	}{
		{"one, fail-fast", source("foos", true), ""},
		{"not fail-fast", source("foos", false), "ApiServerSource foos is not in fail-fast mode"},
		{"two", source("a", true) + "---\n" + source("b", true), "2 ApiServerSources, want 1"},
		{"none", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", "0 ApiServerSources, want 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			err := serverlesstest.CheckSourcesFile(op, path)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("CheckSourcesFile() = %v, want %q", err, tc.want)
			}
		})
	}
}

// The objects whose changes resync the owners are watched with the
// selector the operator names, and only those: a source watching others
// would wake the reconciler for nothing, one watching fewer would miss
// changes.
func TestCheckSourcesOfTheObjectsThatResync(t *testing.T) {
	resyncing := op
	resyncing.ResyncOn = []serverless.Selected{{Kind: serverless.Kind{Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap"},
		Selector: "networking.knative.dev/trust-bundle=true"}}
	bundles := func(value string) sourcesv1.APIVersionKindSelector {
		return sourcesv1.APIVersionKindSelector{APIVersion: "v1", Kind: "ConfigMap", LabelSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"networking.knative.dev/trust-bundle": value}}}
	}
	if err := serverlesstest.CheckSources(resyncing, source("foos", foos, deployments, services, bundles("true"), pods("foos"))); err != nil {
		t.Errorf("CheckSources(every kind, the trust bundles too) = %v, want nil", err)
	}
	for _, tc := range []struct {
		name   string
		source *sourcesv1.ApiServerSource
		want   string
	}{
		{"not watched", source("foos", foos, deployments, services, pods("foos")),
			`no ApiServerSource watches v1 ConfigMap selected by "networking.knative.dev/trust-bundle=true" (Operator.ResyncOn[0])`},
		{"others selected", source("foos", foos, deployments, services, bundles("false"), pods("foos")),
			"watches v1 ConfigMap, which the operator does not name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := serverlesstest.CheckSources(resyncing, tc.source)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckSources() = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
