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

// Package config holds the manifests that ko apply -f config/ installs; its
// tests decode each into its real Go type and run that type's own validation.
package config

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/yaml"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/pkg/serverless"
	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
)

// docs returns every YAML document in the files matching glob, by file.
func docs(t *testing.T, glob string) map[string][][]byte {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match %s: %v", glob, err)
	}
	out := map[string][][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufioReader(b))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) > 0 {
				out[f] = append(out[f], doc)
			}
		}
	}
	return out
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, l := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.Bytes()
}

// decodeStrict decodes a document into v, failing on unknown fields: a
// misspelt field would otherwise be dropped silently.
func decodeStrict(t *testing.T, file string, doc []byte, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, v); err != nil {
		t.Fatalf("%s: does not decode into %T: %v", file, v, err)
	}
}

func kindOf(t *testing.T, doc []byte) string {
	t.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal(doc, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u.GetAPIVersion() + "/" + u.GetKind()
}

// TestEveryManifestValidates decodes every document of config/,
// the shared stream (../stream/), each operator's membership of it (stream/)
// and the example Bar operator's config into its Go type and
// runs the type's validation.
func TestEveryManifestValidates(t *testing.T) {
	ctx := context.Background()
	seen := map[string]int{}
	for _, glob := range []string{"*.yaml", "stream/*.yaml", "../stream/*.yaml", "../examples/bar-operator/config/*.yaml", "../examples/bar-operator/config/stream/*.yaml"} {
		for file, ds := range docs(t, glob) {
			if filepath.Base(file) == "kustomization.yaml" {
				continue // TestTheStreamComposes builds them
			}
			for _, doc := range ds {
				kind := kindOf(t, doc)
				seen[kind]++
				var v apis.Validatable
				switch kind {
				case "v1/Namespace":
					decodeStrict(t, file, doc, &corev1.Namespace{})
				case "v1/ServiceAccount":
					decodeStrict(t, file, doc, &corev1.ServiceAccount{})
				case "v1/Service":
					decodeStrict(t, file, doc, &corev1.Service{})
				case "apps/v1/Deployment":
					decodeStrict(t, file, doc, &appsv1.Deployment{})
				case "rbac.authorization.k8s.io/v1/ClusterRole":
					decodeStrict(t, file, doc, &rbacv1.ClusterRole{})
				case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
					decodeStrict(t, file, doc, &rbacv1.ClusterRoleBinding{})
				case "rbac.authorization.k8s.io/v1/Role":
					decodeStrict(t, file, doc, &rbacv1.Role{})
				case "rbac.authorization.k8s.io/v1/RoleBinding":
					decodeStrict(t, file, doc, &rbacv1.RoleBinding{})
				case "v1/ConfigMap":
					cm := &corev1.ConfigMap{}
					decodeStrict(t, file, doc, cm)
					// As the reconciler reads it, which refuses some of
					// Knative's settings (grpc, prometheus).
					if _, err := serverless.ParseObservabilityConfig(cm.Data); err != nil {
						t.Errorf("%s: %v", file, err)
					}
				case "apiextensions.k8s.io/v1/CustomResourceDefinition":
					crd := &apiextensionsv1.CustomResourceDefinition{}
					decodeStrict(t, file, doc, crd)
					crd.Status.StoredVersions = []string{"v1alpha1"} // the API server's to set
					if errs := crdvalidation.ValidateCustomResourceDefinition(ctx, internalCRD(t, crd)); len(errs) > 0 {
						t.Errorf("%s: %v", file, errs.ToAggregate())
					}
				case "sources.knative.dev/v1/ApiServerSource":
					s := &sourcesv1.ApiServerSource{}
					decodeStrict(t, file, doc, s)
					v = s
				case "sources.knative.dev/v1/PingSource":
					s := &sourcesv1.PingSource{}
					decodeStrict(t, file, doc, s)
					v = s
				case "eventing.knative.dev/v1/Broker":
					b := &eventingv1.Broker{}
					decodeStrict(t, file, doc, b)
					v = b
				case "eventing.knative.dev/v1/Trigger":
					tr := &eventingv1.Trigger{}
					decodeStrict(t, file, doc, tr)
					v = tr
				case "serving.knative.dev/v1/Service":
					// knative.dev/serving needs a newer client-go: checked
					// field by field in TestReconcilerService.
				default:
					t.Errorf("%s: unexpected %s", file, kind)
				}
				if v != nil {
					if err := v.Validate(apis.WithinCreate(ctx)); err != nil {
						t.Errorf("%s: %s does not validate: %v", file, kind, err)
					}
				}
			}
		}
	}
	want := map[string]int{
		"v1/Namespace": 3, "v1/ServiceAccount": 7, "v1/Service": 1, "apps/v1/Deployment": 1,
		"rbac.authorization.k8s.io/v1/ClusterRole": 11, "rbac.authorization.k8s.io/v1/ClusterRoleBinding": 6,
		"rbac.authorization.k8s.io/v1/Role": 4, "rbac.authorization.k8s.io/v1/RoleBinding": 4, "v1/ConfigMap": 2,
		"apiextensions.k8s.io/v1/CustomResourceDefinition": 2,
		"sources.knative.dev/v1/ApiServerSource":           2, "sources.knative.dev/v1/PingSource": 3,
		"eventing.knative.dev/v1/Broker": 1, "eventing.knative.dev/v1/Trigger": 4,
		"serving.knative.dev/v1/Service": 4,
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Error("manifests by kind (-want, +got):", diff)
	}
}

func internalCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensions.CustomResourceDefinition {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensions.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	out := &apiextensions.CustomResourceDefinition{}
	if err := scheme.Convert(crd, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFooSchemaMatchesTheTypes validates Foos made in Go against the CRD's
// schema: what the types and their validation accept, the schema accepts,
// and what they reject, it rejects.
func TestFooSchemaMatchesTheTypes(t *testing.T) {
	var crd apiextensionsv1.CustomResourceDefinition
	for file, ds := range docs(t, "300-foo.yaml") {
		decodeStrict(t, file, ds[0], &crd)
	}
	in := internalCRD(t, &crd)
	// The conversion lifts the only version's schema to spec.validation.
	validator, _, err := validation.NewSchemaValidator(in.Spec.Validation.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	ready := &samplesv1alpha1.Foo{}
	ready.Status.InitializeConditions()
	ready.Status.MarkDeploymentNotOwned("web")
	ready.Status.ObservedGeneration = 3
	ready.Status.AvailableReplicas = 2

	tests := []struct {
		name  string
		spec  samplesv1alpha1.FooSpec
		valid bool
	}{
		{"full", samplesv1alpha1.FooSpec{DeploymentName: "web.v1", Replicas: ptr(3)}, true},
		{"zero replicas", samplesv1alpha1.FooSpec{DeploymentName: "web", Replicas: ptr(0)}, true},
		{"defaulted", samplesv1alpha1.FooSpec{DeploymentName: "web"}, true},
		{"no name", samplesv1alpha1.FooSpec{Replicas: ptr(1)}, false},
		{"bad name", samplesv1alpha1.FooSpec{DeploymentName: "Web_1"}, false},
		{"negative replicas", samplesv1alpha1.FooSpec{DeploymentName: "web", Replicas: ptr(-1)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			foo := ready.DeepCopy()
			foo.APIVersion, foo.Kind = "samplecontroller.knative.io/v1alpha1", "Foo"
			foo.Name, foo.Namespace = "f", "ns"
			foo.Spec = tc.spec
			if got := foo.Validate(context.Background()) == nil; got != tc.valid {
				t.Fatalf("Foo.Validate() valid = %v, want %v", got, tc.valid)
			}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(foo)
			if err != nil {
				t.Fatal(err)
			}
			res := validator.Validate(u)
			if res.IsValid() != tc.valid {
				t.Errorf("schema valid = %v, want %v: %v", res.IsValid(), tc.valid, res.Errors)
			}
		})
	}
}

func ptr(i int32) *int32 { return &i }

// TestRBAC pins the roles: the e2e tests prove each rule is used and enough.
// TestAggregatedRoles: the built-in roles gain the Foo rules, and only those;
// view only reads. (test/e2e proves a user of each may do just that.)
func TestAggregatedRoles(t *testing.T) {
	want := map[string]struct {
		aggregateTo []string
		verbs       []string
	}{
		"foo-operator-edit": {[]string{"admin", "edit"}, []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}},
		"foo-operator-view": {[]string{"view"}, []string{"get", "list", "watch"}},
	}
	for file, ds := range docs(t, "200-aggregated-clusterroles.yaml") {
		for _, doc := range ds {
			var r rbacv1.ClusterRole
			decodeStrict(t, file, doc, &r)
			w, ok := want[r.Name]
			if !ok {
				t.Errorf("unexpected ClusterRole %s", r.Name)
				continue
			}
			delete(want, r.Name)
			for _, to := range w.aggregateTo {
				if r.Labels["rbac.authorization.k8s.io/aggregate-to-"+to] != "true" {
					t.Errorf("%s is not aggregated to %s", r.Name, to)
				}
			}
			for _, rule := range r.Rules {
				if !slices.Equal(rule.APIGroups, []string{samplesv1alpha1.SchemeGroupVersion.Group}) || !slices.Equal(rule.Verbs, w.verbs) {
					t.Errorf("%s grants %v on %v %v, want %v on Foos only", r.Name, rule.Verbs, rule.APIGroups, rule.Resources, w.verbs)
				}
			}
		}
	}
	for name := range want {
		t.Errorf("no ClusterRole %s", name)
	}
}

func TestRBAC(t *testing.T) {
	roles := map[string][]rbacv1.PolicyRule{}
	for file, ds := range docs(t, "200-clusterroles.yaml") {
		for _, doc := range ds {
			var r rbacv1.ClusterRole
			decodeStrict(t, file, doc, &r)
			roles[r.Name] = r.Rules
		}
	}
	for _, r := range roles["foo-reconciler"] {
		for _, v := range r.Verbs {
			if v == "*" || v == "delete" || v == "deletecollection" || v == "watch" {
				t.Errorf("foo-reconciler may %s %v: it never does", v, r.Resources)
			}
		}
		if slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "*") {
			t.Errorf("foo-reconciler is granted %v", r.Resources)
		}
	}
}

// TestReconcilerService checks the Knative Service against what the binary
// reads: its flags and environment, its probes, and the deadline it keeps.
func TestReconcilerService(t *testing.T) {
	var svc struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ObjectMeta `json:"metadata"`
		Spec            struct {
			Template struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
				Spec     struct {
					corev1.PodSpec       `json:",inline"`
					ContainerConcurrency *int64 `json:"containerConcurrency"`
					TimeoutSeconds       *int64 `json:"timeoutSeconds"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	for file, ds := range docs(t, "500-reconciler.yaml") {
		decodeStrict(t, file, ds[0], &svc)
	}
	if got := svc.Metadata.Labels["networking.knative.dev/visibility"]; got != "cluster-local" {
		t.Errorf("visibility label = %q, want cluster-local", got)
	}
	ann := svc.Spec.Template.Metadata.Annotations
	for k, want := range map[string]string{
		"autoscaling.knative.dev/min-scale": "0",
		"autoscaling.knative.dev/max-scale": "1",
	} {
		if ann[k] != want {
			t.Errorf("annotation %s = %q, want %q", k, ann[k], want)
		}
	}
	for _, k := range []string{"autoscaling.knative.dev/window", "autoscaling.knative.dev/scale-to-zero-pod-retention-period"} {
		if _, err := time.ParseDuration(ann[k]); err != nil {
			t.Errorf("annotation %s = %q: %v", k, ann[k], err)
		}
	}
	spec := svc.Spec.Template.Spec
	if spec.ContainerConcurrency == nil || spec.TimeoutSeconds == nil {
		t.Fatal("containerConcurrency and timeoutSeconds must be set")
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	pkg, ok := strings.CutPrefix(c.Image, "ko://github.com/frugal-operator/foo-operator/")
	if !ok {
		t.Fatalf("image %q is not a ko:// path of this module", c.Image)
	}
	if _, err := os.Stat(filepath.Join("..", pkg, "main.go")); err != nil {
		t.Errorf("image %q names no main package: %v", c.Image, err)
	}
	if spec.ServiceAccountName != "foo-reconciler" {
		t.Errorf("serviceAccountName = %q", spec.ServiceAccountName)
	}

	help := binaryHelp(t, pkg)
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			// Read by the Go runtime, not by the binary: a limit it takes,
			// below the container's, so that the garbage collector works
			// harder before the kernel kills the pod.
			limit, err := parseGoMemLimit(e.Value)
			mem := c.Resources.Limits.Memory()
			switch {
			case err != nil:
				t.Errorf("GOMEMLIMIT = %q: %v", e.Value, err)
			case mem.IsZero():
				t.Error("GOMEMLIMIT is set, but no memory limit")
			case limit >= mem.Value():
				t.Errorf("GOMEMLIMIT %s is not below the memory limit %s", e.Value, mem)
			}
			continue
		}
		if !strings.Contains(help, "(env "+e.Name+")") {
			t.Errorf("env %s is not read by the binary (its -help names: %v)", e.Name, envNames(help))
		}
		if e.Name == "ACK_DEADLINE" {
			d, err := time.ParseDuration(e.Value)
			if err != nil {
				t.Errorf("ACK_DEADLINE = %q: %v", e.Value, err)
			} else if time.Duration(*spec.TimeoutSeconds)*time.Second <= d {
				t.Errorf("timeoutSeconds %d must be above ACK_DEADLINE %v, so the receiver answers 503 first", *spec.TimeoutSeconds, d)
			}
		}
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.IntValue() != 0 {
			t.Errorf("%s probe must be an httpGet on the user port (no port): %+v", name, p)
			continue
		}
		if p.HTTPGet.Path != "/readyz" && p.HTTPGet.Path != "/healthz" {
			t.Errorf("%s probe path %q is not served", name, p.HTTPGet.Path)
		}
	}
}

// parseGoMemLimit parses GOMEMLIMIT as the Go runtime does (a number of
// bytes, with an optional B, KiB, MiB, GiB or TiB), except "off".
func parseGoMemLimit(v string) (int64, error) {
	units := []struct {
		suffix string
		shift  uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}
	shift := uint(0)
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			v, shift = n, u.shift
			break
		}
	}
	n, err := strconv.ParseUint(v, 10, 63-int(shift))
	if err != nil {
		return 0, errors.New("want a number of bytes with an optional B, KiB, MiB, GiB or TiB")
	}
	return int64(n) << shift, nil
}

func envNames(help string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\(env ([A-Z_]+)\)`).FindAllStringSubmatch(help, -1) {
		out = append(out, m[1])
	}
	return out
}

// binaryHelp builds the binary and returns what its -help prints.
func binaryHelp(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bin")
	if out, err := exec.Command("go", "build", "-o", bin, "../"+pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, _ := exec.Command(bin, "-help").CombinedOutput() // exits 0 or 2
	return string(out)
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// TestEveryObjectCarriesTheRecommendedLabels: `kubectl get -l
// app.kubernetes.io/part-of=foo-operator` selects the whole install, with
// each object's component and the version it came with.
func TestEveryObjectCarriesTheRecommendedLabels(t *testing.T) {
	for _, glob := range []string{"*.yaml", "stream/*.yaml"} {
		for file, ds := range docs(t, glob) {
			if filepath.Base(file) == "kustomization.yaml" {
				continue
			}
			for _, doc := range ds {
				var u unstructured.Unstructured
				if err := yaml.Unmarshal(doc, &u.Object); err != nil {
					t.Fatal(err)
				}
				l := u.GetLabels()
				what := file + ": " + u.GetKind() + " " + u.GetName()
				for k, want := range map[string]string{
					"app.kubernetes.io/name":    "foo-operator",
					"app.kubernetes.io/part-of": "foo-operator",
					"app.kubernetes.io/version": "devel", // no release yet: the source tree is devel
				} {
					if l[k] != want {
						t.Errorf("%s: label %s = %q, want %q", what, k, l[k], want)
					}
				}
				if !slices.Contains([]string{"operator", "api", "reconciler", "sources", "stream"}, l["app.kubernetes.io/component"]) {
					t.Errorf("%s: label app.kubernetes.io/component = %q, want one of the install's components", what, l["app.kubernetes.io/component"])
				}
			}
		}
	}
}

// TestTheSourcesSendWhatTheOperatorNames checks 600-sources.yaml's
// ApiServerSource against foo.Operator's kinds.
func TestTheSourcesSendWhatTheOperatorNames(t *testing.T) {
	var sources []*sourcesv1.ApiServerSource
	for _, doc := range docs(t, "600-sources.yaml")["600-sources.yaml"] {
		if kindOf(t, doc) == "sources.knative.dev/v1/ApiServerSource" {
			src := &sourcesv1.ApiServerSource{}
			decodeStrict(t, "600-sources.yaml", doc, src)
			sources = append(sources, src)
		}
	}
	if err := serverlesstest.CheckSources(foo.Operator, sources...); err != nil {
		t.Error(err)
	}
}
