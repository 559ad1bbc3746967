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

package serverless

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	dynamicfake "knative.dev/pkg/injection/clients/dynamicclient/fake"
	"knative.dev/pkg/resolver"
	"knative.dev/pkg/tracker"
)

// The trackers of every call of New answer together: an owner that only a
// dry run tracked (a new process that has reconciled nobody yet) is found.
func TestTheTrackersOfEveryNewAnswerTogether(t *testing.T) {
	ref := tracker.Reference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"}
	track := func(tr tracker.Interface, owner string) {
		if err := tr.TrackReference(ref, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: owner}}); err != nil {
			t.Fatal(err)
		}
	}
	serving, dry := NewTracker(context.Background()), NewTracker(context.Background())
	track(serving, "a")
	track(dry, "a")
	track(dry, "b")
	ts := &trackers{}
	ts.add(serving)
	ts.add(nil) // a dry run's New without a tracker
	ts.add(dry)

	cm := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	want := []types.NamespacedName{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}}
	if diff := cmp.Diff(want, ts.observers(cm)); diff != "" {
		t.Error("observers (-want, +got):", diff)
	}
}

// A sink resolved with knative.dev/pkg's URIResolver, from the context New
// is given, is read from the API server at each resolution: its new address
// is seen at once, no informer lists or watches, and the reference is
// tracked for the owner.
func TestASinkIsResolvedWithoutAnInformer(t *testing.T) {
	ksvc := func(url string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serving.knative.dev/v1", "kind": "Service",
			"metadata": map[string]any{"namespace": "ns", "name": "sink"},
			"status":   map[string]any{"address": map[string]any{"url": url}},
		}}
	}
	ctx, client := dynamicfake.With(context.Background(), runtime.NewScheme(), ksvc("http://sink.ns.svc.cluster.local"))
	tr := NewTracker(ctx)
	r := resolver.NewURIResolverFromTracker(withDucks(ctx), tr)
	owner := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "owner"}}
	dest := duckv1.Destination{Ref: &duckv1.KReference{APIVersion: "serving.knative.dev/v1", Kind: "Service", Namespace: "ns", Name: "sink"}}

	resolve := func() string {
		t.Helper()
		u, err := r.URIFromDestinationV1(ctx, dest, owner)
		if err != nil {
			t.Fatal(err)
		}
		return u.String()
	}
	if got := resolve(); got != "http://sink.ns.svc.cluster.local" {
		t.Errorf("resolved %s, want the sink's address", got)
	}
	gvr := schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}
	if _, err := client.Resource(gvr).Namespace("ns").Update(ctx, ksvc("http://sink-2.ns.svc.cluster.local"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := resolve(); got != "http://sink-2.ns.svc.cluster.local" {
		t.Errorf("resolved %s after the sink's address changed, want the new one", got)
	}
	var verbs []string
	for _, a := range client.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if diff := cmp.Diff([]string{"get", "update", "get"}, verbs); diff != "" {
		t.Error("requests (-want, +got):", diff)
	}
	sink := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "serving.knative.dev/v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sink"}}
	if diff := cmp.Diff([]types.NamespacedName{{Namespace: "ns", Name: "owner"}}, tr.GetObservers(sink)); diff != "" {
		t.Error("observers of the sink (-want, +got):", diff)
	}
}
