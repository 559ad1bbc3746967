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
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/yaml"

	"github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/reconciler/bar"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/pkg/serverless"
	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
)

// The shared stream (../stream/) and its members' Components.
const (
	streamNamespace = "operator-stream"
	streamSource    = "operators"
	streamBroker    = "operators"
	aggregateLabel  = "stream.frugal-operator.dev/aggregate-to-watcher"
)

// members are the operators' Components that join the stream, and the
// reconciler each subscribes.
var members = []struct {
	dir       string
	namespace string
	service   string
	op        serverless.Operator
}{
	{"stream", "foo-operator", "foo-reconciler", foo.Operator},
	{"../examples/bar-operator/config/stream", "bar-operator", "bar-reconciler", bar.Operator},
}

// component is what is read of a kustomize Component.
type component struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Patches    []struct {
		Target struct {
			Group, Version, Kind, Namespace, Name string
		} `json:"target"`
		Patch string `json:"patch"`
	} `json:"patches"`
}

// TestTheStreamComposes builds the stream's ApiServerSource as kubectl
// apply -k does with every member's Component (their JSON patches applied
// in turn) and checks the result, and each member: it adds only entries to
// the stream's resources, which with the stream's own send its operator's
// kinds (serverlesstest.CheckSources); each kind it adds has its Trigger, subscribed to
// its own reconciler, and its aggregated rule for the stream's reader; and
// it has a Trigger for what the stream itself watches (its adapter's pod,
// whose readiness asks for a resync).
func TestTheStreamComposes(t *testing.T) {
	ctx := context.Background()
	source := docs(t, "../stream/600-source.yaml")["../stream/600-source.yaml"][0]
	var base sourcesv1.ApiServerSource
	decodeStrict(t, "../stream/600-source.yaml", source, &base)
	if base.Namespace != streamNamespace || base.Name != streamSource || base.Spec.Sink.Ref.Name != streamBroker {
		t.Fatalf("the stream's source is %s/%s, to %s; the Components patch %s/%s, to %s",
			base.Namespace, base.Name, base.Spec.Sink.Ref.Name, streamNamespace, streamSource, streamBroker)
	}
	composed, err := yaml.YAMLToJSON(stripComments(source))
	if err != nil {
		t.Fatal(err)
	}
	var want []sourcesv1.APIVersionKindSelector
	want = append(want, base.Spec.Resources...)
	for _, m := range members {
		t.Run(m.namespace, func(t *testing.T) {
			var c component
			decodeStrict(t, m.dir, docs(t, filepath.Join(m.dir, "kustomization.yaml"))[filepath.Join(m.dir, "kustomization.yaml")][0], &c)
			if c.APIVersion != "kustomize.config.k8s.io/v1alpha1" || c.Kind != "Component" {
				t.Fatalf("%s/kustomization.yaml is a %s %s, want a kustomize Component", m.dir, c.APIVersion, c.Kind)
			}
			if len(c.Patches) != 1 {
				t.Fatalf("%d patches, want 1 (the stream's source)", len(c.Patches))
			}
			p := c.Patches[0]
			if p.Target.Group != "sources.knative.dev" || p.Target.Kind != "ApiServerSource" || p.Target.Namespace != streamNamespace || p.Target.Name != streamSource {
				t.Fatalf("the patch targets %+v, want the stream's ApiServerSource", p.Target)
			}
			ops, err := yaml.YAMLToJSON([]byte(p.Patch))
			if err != nil {
				t.Fatal(err)
			}
			patch, err := jsonpatch.DecodePatch(ops)
			if err != nil {
				t.Fatal(err)
			}
			var added []sourcesv1.APIVersionKindSelector
			for _, op := range patch {
				path, _ := op.Path()
				if op.Kind() != "add" || path != "/spec/resources/-" {
					t.Errorf("the patch does %s %s: a member only appends to the stream's resources", op.Kind(), path)
				}
				v, err := op.ValueInterface()
				if err != nil {
					t.Fatal(err)
				}
				var r sourcesv1.APIVersionKindSelector
				b, _ := yaml.Marshal(v)
				decodeStrict(t, m.dir, b, &r)
				added = append(added, r)
			}
			if composed, err = patch.Apply(composed); err != nil {
				t.Fatal("applying the patch:", err)
			}
			want = append(want, added...)
			// What the member adds, with what the stream itself watches,
			// sends the member's kinds.
			mine := base.DeepCopy()
			mine.Spec.Resources = append(mine.Spec.Resources, added...)
			if err := serverlesstest.CheckSources(m.op, mine); err != nil {
				t.Error(err)
			}

			// Each kind added, and each the stream itself watches, has a
			// Trigger to this member's reconciler.
			kinds := map[string]bool{}
			for _, r := range append(slices.Clip(base.Spec.Resources), added...) {
				kinds[r.APIVersion+"/"+r.Kind] = true
			}
			for _, f := range c.Resources {
				for _, doc := range docs(t, filepath.Join(m.dir, f))[filepath.Join(m.dir, f)] {
					switch kindOf(t, doc) {
					case "eventing.knative.dev/v1/Trigger":
						var tr eventingv1.Trigger
						decodeStrict(t, f, doc, &tr)
						ref := tr.Spec.Subscriber.Ref
						if tr.Namespace != streamNamespace || tr.Spec.Broker != streamBroker || ref == nil || ref.Namespace != m.namespace || ref.Name != m.service {
							t.Errorf("Trigger %s/%s on %s to %+v, want on %s/%s to %s/%s", tr.Namespace, tr.Name, tr.Spec.Broker, ref, streamNamespace, streamBroker, m.namespace, m.service)
						}
						for _, kind := range filteredKinds(tr.Spec.Filters) {
							if !kinds[kind] {
								t.Errorf("Trigger %s filters %q, which the member neither adds nor needs", tr.Name, kind)
							}
							delete(kinds, kind)
						}
					case "rbac.authorization.k8s.io/v1/ClusterRole":
						var r rbacv1.ClusterRole
						decodeStrict(t, f, doc, &r)
						if r.Labels[aggregateLabel] != "true" {
							t.Errorf("ClusterRole %s lacks %s: the stream's reader would not be granted it", r.Name, aggregateLabel)
						}
						var got, wantRules []string
						for _, rule := range r.Rules {
							got = append(got, fmt.Sprintf("%v %v %v", rule.APIGroups, rule.Resources, rule.Verbs))
						}
						for _, a := range added {
							gv, _ := schema.ParseGroupVersion(a.APIVersion)
							plural := strings.ToLower(a.Kind) + "s"
							wantRules = append(wantRules, fmt.Sprintf("[%s] [%s] [get list watch]", gv.Group, plural))
						}
						if diff := cmp.Diff(wantRules, got); diff != "" {
							t.Errorf("ClusterRole %s grants the stream's reader (-want, +got): %s", r.Name, diff)
						}
					default:
						t.Errorf("%s: unexpected %s", f, kindOf(t, doc))
					}
				}
			}
			for kind := range kinds {
				t.Errorf("no Trigger for %s", kind)
			}
		})
	}
	var got sourcesv1.ApiServerSource
	if err := yaml.UnmarshalStrict(composed, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got.Spec.Resources); diff != "" {
		t.Error("the composed source's resources (-want, +got):", diff)
	}
	if err := got.Validate(apis.WithinCreate(ctx)); err != nil {
		t.Error("the composed source does not validate:", err)
	}
	for i, r := range got.Spec.Resources {
		if slices.ContainsFunc(got.Spec.Resources[:i], func(o sourcesv1.APIVersionKindSelector) bool { return o.APIVersion == r.APIVersion && o.Kind == r.Kind }) {
			t.Errorf("two members watch %s %s: each would be woken by the other's objects (Triggers cannot filter on labels)", r.APIVersion, r.Kind)
		}
	}
}

// filteredKinds returns the kinds (apiversion/kind) that a Trigger's filters
// let through: an exact match at the top, or one of any's.
func filteredKinds(filters []eventingv1.SubscriptionsAPIFilter) []string {
	var kinds []string
	for _, f := range filters {
		if f.Exact["kind"] != "" {
			kinds = append(kinds, f.Exact["apiversion"]+"/"+f.Exact["kind"])
		}
		kinds = append(kinds, filteredKinds(f.Any)...)
	}
	return kinds
}
