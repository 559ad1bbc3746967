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

package receiver

import (
	"context"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/tracker"
)

// The tracked kind of the tests: a sink's Knative Service.
var kserviceKind = schema.GroupKind{Group: "serving.knative.dev", Kind: "Service"}

// kserviceEvent is a Resource-mode event of a Knative Service with labels.
func kserviceEvent(verb, ns, name string, labels map[string]any) cloudevents.Event {
	return adapterEvent("resource", verb, "serving.knative.dev/v1", "Service", "services", ns, name, map[string]any{
		"apiVersion": "serving.knative.dev/v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": ns, "uid": "k-" + name, "labels": labels},
		"status":   map[string]any{"address": map[string]any{"url": "http://" + name + "." + ns + ".svc.cluster.local"}},
	})
}

// trackingDecoder is a decoder whose owners track Knative Services in a
// knative.dev/pkg tracker: foo a by name, foo b by the label sink=yes.
func trackingDecoder(t *testing.T) *Decoder {
	t.Helper()
	tr := tracker.New(func(types.NamespacedName) {}, time.Hour)
	owner := func(name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	refs := map[string]tracker.Reference{
		"a": {APIVersion: "serving.knative.dev/v1", Kind: "Service", Namespace: "ns", Name: "sink"},
		"b": {APIVersion: "serving.knative.dev/v1", Kind: "Service", Namespace: "ns",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"sink": "yes"}}},
	}
	for name, ref := range refs {
		if err := tr.TrackReference(ref, owner(name)); err != nil {
			t.Fatal(err)
		}
	}
	d, _ := newDecoder()
	d.Tracked = []schema.GroupKind{kserviceKind}
	d.Observers = func(obj *metav1.PartialObjectMetadata) []types.NamespacedName { return tr.GetObservers(obj) }
	return d
}

// An event of a tracked object reconciles the owners that track it, by
// name or by its labels, once a resync has listed every owner.
func TestATrackedObjectsEventReconcilesItsObservers(t *testing.T) {
	tests := []struct {
		name  string
		event cloudevents.Event
		want  []types.NamespacedName
	}{
		{"tracked by name", kserviceEvent("update", "ns", "sink", nil), key("ns", "a")},
		{"tracked by name and by label", kserviceEvent("update", "ns", "sink", map[string]any{"sink": "yes"}),
			[]types.NamespacedName{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}}},
		{"tracked by label", kserviceEvent("add", "ns", "other", map[string]any{"sink": "yes"}), key("ns", "b")},
		{"deleted", kserviceEvent("delete", "ns", "sink", nil), key("ns", "a")},
		{"reference mode: by name only", refEvent("update", "serving.knative.dev/v1", "Service", "services", "ns", "sink"), key("ns", "a")},
		{"tracked by nobody", kserviceEvent("update", "ns", "other", nil), nil},
		{"another namespace", kserviceEvent("update", "other", "sink", nil), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := trackingDecoder(t)
			d.Listed(nil)
			target, err := decodeAndResolve(d, &tc.event, Sender{})
			if err != nil {
				t.Fatal(err)
			}
			less := func(a, b types.NamespacedName) bool { return a.String() < b.String() }
			if diff := cmp.Diff(tc.want, target.Keys, cmpopts.SortSlices(less)); diff != "" {
				t.Error("keys (-want, +got):", diff)
			}
			if (tc.want == nil) != (target.Ignored != "") {
				t.Errorf("ignored %q, want it ignored only when nobody tracks the object", target.Ignored)
			}
		})
	}
}

// Until a resync has listed every owner, what is tracked is not known (a
// new process has reconciled nobody): the event waits, and is answered 503
// at its deadline, to come again.
func TestATrackedObjectsEventWaitsForTheFirstResync(t *testing.T) {
	d := trackingDecoder(t)
	e := kserviceEvent("update", "ns", "sink", nil)
	target, err := d.Decode(&e, Sender{})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := d.Resolve(ctx, target); err == nil || IsBadEvent(err) {
		t.Fatalf("resolved before any resync listed: %v, want a transient error", err)
	}

	d.Listed([]types.NamespacedName{}) // a burst's resync would not do: it lists some namespaces
	resolved := make(chan Target)
	go func() {
		t, _ := d.Resolve(context.Background(), target)
		resolved <- t
	}()
	if got := <-resolved; !cmp.Equal(got.Keys, key("ns", "a")) {
		t.Errorf("keys once listed = %v, want ns/a", got.Keys)
	}
}

// A tracked object's event that names no namespace, or an invalid name,
// is a bad event: no tracker could hold it.
func TestATrackedObjectsBadEventIsRefused(t *testing.T) {
	for _, e := range []cloudevents.Event{
		kserviceEvent("update", "", "sink", nil),
		kserviceEvent("update", "ns", "Not_A_Name", nil),
	} {
		d := trackingDecoder(t)
		d.Listed(nil)
		if _, err := decodeAndResolve(d, &e, Sender{}); !IsBadEvent(err) {
			t.Errorf("%s: err = %v, want a bad event", e.Subject(), err)
		}
	}
}

// A decoder scoped to one namespace reconciles only the observers of that
// namespace.
func TestATrackedObjectsObserversOutsideTheNamespaceAreIgnored(t *testing.T) {
	for _, tc := range []struct {
		namespace string
		want      Target
	}{
		{"ns", Target{Keys: key("ns", "a")}},
		{"other", Target{Ignored: "namespace ns is not reconciled: only other is"}},
	} {
		d := trackingDecoder(t)
		d.Namespace = tc.namespace
		d.Listed(nil)
		e := kserviceEvent("update", "ns", "sink", nil)
		got, err := decodeAndResolve(d, &e, Sender{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("scoped to %s (-want, +got): %s", tc.namespace, diff)
		}
	}
}
