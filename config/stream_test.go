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

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/eventing/pkg/eventfilter"
	"knative.dev/eventing/pkg/eventfilter/subscriptionsapi"
	"knative.dev/pkg/apis"

	"github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/reconciler/bar"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/pkg/serverless"
	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
	"github.com/frugal-operator/foo-operator/pkg/streamkeeper"
	"github.com/frugal-operator/foo-operator/pkg/streamrouter"
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
}

// TestTheStreamComposes checks each member's Component and the source the
// stream-keeper makes with them all: a member adds resources only (its
// ClusterRole and Trigger, no patch), and its Trigger declares entries that,
// with the stream's adapter pod, send its operator's kinds
// (serverlesstest.CheckSources); it filters each kind declared, and the
// adapter's pod, to its own reconciler; its ClusterRole grants the stream's
// reader each kind declared. The keeper's own Trigger filters the kinds the
// stream watches for itself, and the source with every member validates.
func TestTheStreamComposes(t *testing.T) {
	ctx := context.Background()
	base, err := streamkeeper.Source()
	if err != nil {
		t.Fatal(err)
	}
	if base.Namespace != streamNamespace || base.Name != streamSource || base.Spec.Sink.Ref.Name != streamBroker {
		t.Fatalf("the stream's source is %s/%s, to %s; want %s/%s, to %s",
			base.Namespace, base.Name, base.Spec.Sink.Ref.Name, streamNamespace, streamSource, streamBroker)
	}
	var adapterPod []sourcesv1.APIVersionKindSelector
	for _, r := range base.Spec.Resources {
		if r.Kind == "Pod" {
			adapterPod = append(adapterPod, r)
		}
	}
	// checkTrigger checks a member's Trigger: on the stream's Broker, to
	// its reconciler, passing the events the router names for it only.
	checkTrigger := func(t *testing.T, file string, tr *eventingv1.Trigger, namespace, service string) {
		t.Helper()
		ref := tr.Spec.Subscriber.Ref
		if tr.Namespace != streamNamespace || tr.Spec.Broker != streamBroker || ref == nil || ref.Namespace != namespace || ref.Name != service {
			t.Errorf("%s: Trigger %s/%s on %s to %+v, want on %s/%s to %s/%s", file, tr.Namespace, tr.Name, tr.Spec.Broker, ref, streamNamespace, streamBroker, namespace, service)
		}
		if want := []eventingv1.SubscriptionsAPIFilter{streamrouter.Filter(tr.Name)}; !equality.Semantic.DeepEqual(tr.Spec.Filters, want) {
			t.Errorf("%s: Trigger %s filters %+v, want the events the stream-router names for it only: %+v", file, tr.Name, tr.Spec.Filters, want)
		}
	}
	// The stream's own Triggers take the adapter's events, not the
	// router's answers; the keeper's, the kinds the stream watches for it.
	for _, c := range []struct{ file, name string }{{"../stream/400-router.yaml", "stream-router"}, {"../stream/500-keeper.yaml", "stream-keeper"}} {
		for _, doc := range docs(t, c.file)[c.file] {
			if kindOf(t, doc) != "eventing.knative.dev/v1/Trigger" {
				continue
			}
			var tr eventingv1.Trigger
			decodeStrict(t, c.file, doc, &tr)
			if tr.Name != c.name || tr.Spec.Subscriber.Ref == nil || tr.Spec.Subscriber.Ref.Name != c.name {
				t.Errorf("%s: Trigger %s to %+v, want %s to %s", c.file, tr.Name, tr.Spec.Subscriber.Ref, c.name, c.name)
			}
			if tr.Labels[streamkeeper.MemberLabel] != "" {
				t.Errorf("%s: Trigger %s is labelled %s: it would be read as a member's", c.file, tr.Name, streamkeeper.MemberLabel)
			}
			filter := subscriptionsapi.CreateSubscriptionsAPIFilters(zap.NewNop(), tr.Spec.Filters)
			for _, r := range base.Spec.Resources {
				e := cloudevents.NewEvent()
				e.SetID("1")
				e.SetSource("https://10.0.0.1:443")
				e.SetType("dev.knative.apiserver.resource.update")
				e.SetExtension("apiversion", r.APIVersion)
				e.SetExtension("kind", r.Kind)
				if got := filter.Filter(ctx, e); got != eventfilter.PassFilter {
					t.Errorf("%s: Trigger %s does not pass the adapter's events of %s %s", c.file, tr.Name, r.APIVersion, r.Kind)
				}
				e.SetExtension(streamrouter.Extension, ",foo-reconciler,")
				if got := filter.Filter(ctx, e); got != eventfilter.FailFilter {
					t.Errorf("%s: Trigger %s passes the router's answers (%s %s): it would take each event twice", c.file, tr.Name, r.APIVersion, r.Kind)
				}
			}
		}
	}
	var all [][]sourcesv1.APIVersionKindSelector
	for _, m := range members {
		t.Run(m.namespace, func(t *testing.T) {
			var c component
			decodeStrict(t, m.dir, docs(t, filepath.Join(m.dir, "kustomization.yaml"))[filepath.Join(m.dir, "kustomization.yaml")][0], &c)
			if c.APIVersion != "kustomize.config.k8s.io/v1alpha1" || c.Kind != "Component" {
				t.Fatalf("%s/kustomization.yaml is a %s %s, want a kustomize Component", m.dir, c.APIVersion, c.Kind)
			}
			var declared []sourcesv1.APIVersionKindSelector
			var roles []rbacv1.ClusterRole
			triggers := 0
			for _, f := range c.Resources {
				for _, doc := range docs(t, filepath.Join(m.dir, f))[filepath.Join(m.dir, f)] {
					switch kindOf(t, doc) {
					case "eventing.knative.dev/v1/Trigger":
						var tr eventingv1.Trigger
						decodeStrict(t, f, doc, &tr)
						triggers++
						if tr.Labels[streamkeeper.MemberLabel] != "true" {
							t.Errorf("Trigger %s is not labelled %s=true: the keeper would not read it", tr.Name, streamkeeper.MemberLabel)
						}
						if declared, err = streamkeeper.Declared(&tr); err != nil {
							t.Fatal(err)
						}
						checkTrigger(t, f, &tr, m.namespace, m.service)
					case "rbac.authorization.k8s.io/v1/ClusterRole":
						var r rbacv1.ClusterRole
						decodeStrict(t, f, doc, &r)
						roles = append(roles, r)
					default:
						t.Errorf("%s: unexpected %s", f, kindOf(t, doc))
					}
				}
			}
			if triggers != 1 {
				t.Fatalf("%d Triggers, want 1", triggers)
			}
			// What the member declares, with the stream's adapter pod, sends
			// the member's kinds.
			mine := base.DeepCopy()
			mine.Spec.Resources = append(slices.Clip(adapterPod), declared...)
			if err := serverlesstest.CheckSources(m.op, mine); err != nil {
				t.Error(err)
			}
			for _, r := range roles {
				if r.Labels[aggregateLabel] != "true" {
					t.Errorf("ClusterRole %s lacks %s: the stream's reader would not be granted it", r.Name, aggregateLabel)
				}
				var got, wantRules []string
				for _, rule := range r.Rules {
					got = append(got, fmt.Sprintf("%v %v %v", rule.APIGroups, rule.Resources, rule.Verbs))
				}
				for _, a := range declared {
					gv, _ := schema.ParseGroupVersion(a.APIVersion)
					plural := strings.ToLower(a.Kind) + "s"
					wantRules = append(wantRules, fmt.Sprintf("[%s] [%s] [get list watch]", gv.Group, plural))
				}
				if diff := cmp.Diff(wantRules, got); diff != "" {
					t.Errorf("ClusterRole %s grants the stream's reader (-want, +got): %s", r.Name, diff)
				}
			}
			if len(roles) != 1 {
				t.Errorf("%d ClusterRoles, want 1", len(roles))
			}
			all = append(all, declared)
		})
	}
	got := streamkeeper.Compose(base, all...)
	if err := got.Validate(apis.WithinCreate(ctx)); err != nil {
		t.Error("the composed source does not validate:", err)
	}
}

// TestTheKeepersNamesAreTheStreams checks the names the stream-keeper's code
// holds against the stream's manifests: its source's template selects the
// members' Triggers by streamkeeper.MemberLabel, the reader's aggregated
// ClusterRole is streamkeeper.ReaderRole, bound to the source's
// ServiceAccount, and the keeper may read that ClusterRole.
func TestTheKeepersNamesAreTheStreams(t *testing.T) {
	base, err := streamkeeper.Source()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(base.Spec.Resources, func(r sourcesv1.APIVersionKindSelector) bool {
		return r.Kind == "Trigger" && r.LabelSelector != nil && r.LabelSelector.MatchLabels[streamkeeper.MemberLabel] == "true"
	}) {
		t.Errorf("the source's template selects no Trigger by %s=true: the keeper would not hear of its members", streamkeeper.MemberLabel)
	}
	const file = "../stream/200-rbac.yaml"
	var reader, keeperReads, bound bool
	for _, doc := range docs(t, file)[file] {
		switch kindOf(t, doc) {
		case "rbac.authorization.k8s.io/v1/ClusterRole":
			var r rbacv1.ClusterRole
			decodeStrict(t, file, doc, &r)
			if r.Name == streamkeeper.ReaderRole && r.AggregationRule != nil {
				reader = true
			}
			for _, rule := range r.Rules {
				if slices.Contains(rule.Resources, "clusterroles") && slices.Equal(rule.ResourceNames, []string{streamkeeper.ReaderRole}) {
					keeperReads = true
				}
			}
		case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			decodeStrict(t, file, doc, &b)
			if b.RoleRef.Name == streamkeeper.ReaderRole && len(b.Subjects) == 1 && b.Subjects[0].Name == base.Spec.ServiceAccountName && b.Subjects[0].Namespace == base.Namespace {
				bound = true
			}
		}
	}
	if !reader || !bound || !keeperReads {
		t.Errorf("%s: the aggregated ClusterRole %s %v, bound to %s/%s %v, readable by the keeper by name %v; want all true",
			file, streamkeeper.ReaderRole, reader, base.Namespace, base.Spec.ServiceAccountName, bound, keeperReads)
	}
}
