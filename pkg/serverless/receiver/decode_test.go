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
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgotesting "k8s.io/client-go/testing"

	"github.com/frugal-operator/foo-operator/pkg/serverless/handoff"
	"github.com/frugal-operator/foo-operator/pkg/serverless/ownwrites"
)

// ownedDeployment is the Deployment that deploymentResourceEvent reports,
// live (same uid), controlled by the Foo named owner ("" for none).
func ownedDeployment(ns, name, owner string) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("d-" + name)}}
	if owner != "" {
		d.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(
			&metav1.ObjectMeta{Name: owner, UID: types.UID("u-" + owner)}, fooKind.WithVersion("v1alpha1"))}
	}
	return d
}

// The kinds of the tests: a Foo that owns Deployments.
var (
	fooKind        = schema.GroupKind{Group: "samplecontroller.knative.io", Kind: "Foo"}
	deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind()
)

func newDecoder(objs ...runtime.Object) (*Decoder, *kubefake.Clientset) {
	kc := kubefake.NewSimpleClientset(objs...)
	return &Decoder{
		Owner: fooKind,
		Owned: []Owned{{Kind: deploymentKind, Get: func(ctx context.Context, ns, name string) (metav1.Object, error) {
			return kc.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		}}},
	}, kc
}

// decodeAndResolve maps e as the receiver does: Decode, then Resolve.
func decodeAndResolve(d *Decoder, e *cloudevents.Event, sender Sender) (Target, error) {
	t, err := d.Decode(e, sender)
	if err != nil {
		return t, err
	}
	return d.Resolve(context.Background(), t)
}

func key(ns, name string) []types.NamespacedName {
	return []types.NamespacedName{{Namespace: ns, Name: name}}
}

// editObject returns a Resource-mode event whose object edit changed.
func editObject(e cloudevents.Event, edit func(obj map[string]any)) cloudevents.Event {
	var obj map[string]any
	_ = e.DataAs(&obj)
	edit(obj)
	_ = e.SetData(cloudevents.ApplicationJSON, obj)
	return e
}

func withData(e cloudevents.Event, ct string, data []byte) cloudevents.Event {
	_ = e.SetData(ct, data)
	return e
}

func TestDecode(t *testing.T) {
	noExt := func(e cloudevents.Event) cloudevents.Event {
		for _, k := range []string{"kind", "apiversion"} {
			e.SetExtension(k, nil)
		}
		return e
	}
	tests := []struct {
		name    string
		event   cloudevents.Event
		objects []runtime.Object
		want    Target
		wantBad bool
	}{
		{name: "foo resource add", event: fooResourceEvent("add", "ns", "a"), want: Target{Keys: key("ns", "a"), Created: true,
			Written: &Written{Group: "samplecontroller.knative.io", Kind: "Foo", Namespace: "ns", Name: "a", UID: "u-a", Add: true}}},
		{name: "foo resource update", event: fooResourceEvent("update", "ns", "a"), want: Target{Keys: key("ns", "a"), Changed: true,
			Written: &Written{Group: "samplecontroller.knative.io", Kind: "Foo", Namespace: "ns", Name: "a", UID: "u-a"}}},
		{name: "foo resource delete", event: fooResourceEvent("delete", "ns", "a"), want: Target{Keys: key("ns", "a")}},
		{name: "foo ref add", event: refEvent("add", fooAPIVersion, "Foo", "foos", "ns", "a"), want: Target{Keys: key("ns", "a")}},
		{name: "foo ref update", event: refEvent("update", fooAPIVersion, "Foo", "foos", "ns", "a"), want: Target{Keys: key("ns", "a")}},
		{name: "foo ref delete", event: refEvent("delete", fooAPIVersion, "Foo", "foos", "ns", "a"), want: Target{Keys: key("ns", "a")}},
		{name: "foo of another version", event: refEvent("add", "samplecontroller.knative.io/v1", "Foo", "foos", "ns", "a"), want: Target{Keys: key("ns", "a")}},
		{name: "kind only in the extensions", event: withData(fooResourceEvent("add", "ns", "a"), "application/json", []byte(`{"metadata":{"name":"a","namespace":"ns"}}`)), want: Target{Keys: key("ns", "a"), Created: true,
			Written: &Written{Group: "samplecontroller.knative.io", Kind: "Foo", Namespace: "ns", Name: "a", Add: true}}},
		{name: "owned deployment resource add", event: deploymentResourceEvent("add", "ns", "web", "a"), want: Target{Keys: key("ns", "a"),
			Written: &Written{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web", UID: "d-web", Add: true}}},
		{name: "owned deployment resource update", event: deploymentResourceEvent("update", "ns", "web", "a"), want: Target{Keys: key("ns", "a"),
			Written: &Written{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web", UID: "d-web"}}},
		{name: "owned deployment resource delete", event: deploymentResourceEvent("delete", "ns", "web", "a"), want: Target{Keys: key("ns", "a")}},
		{name: "deployment without owner", event: deploymentResourceEvent("update", "ns", "web", ""), want: Target{Ignored: "ns/web is not controlled by a Foo"}},
		{
			name:    "owned deployment ref: read its owner",
			event:   refEvent("update", "apps/v1", "Deployment", "deployments", "ns", "web"),
			objects: []runtime.Object{ownedDeployment("ns", "web", "a")},
			want:    Target{Keys: key("ns", "a")},
		},
		{
			name:    "unowned deployment ref",
			event:   refEvent("update", "apps/v1", "Deployment", "deployments", "ns", "web"),
			objects: []runtime.Object{ownedDeployment("ns", "web", "")},
			want:    Target{Ignored: "ns/web is not controlled by a Foo"},
		},
		{
			name:  "deleted deployment ref",
			event: refEvent("delete", "apps/v1", "Deployment", "deployments", "ns", "web"),
			want:  Target{Ignored: "deployment ns/web no longer exists, its owner is unknown"},
		},
		{name: "ping", event: pingEvent(), want: Target{Resync: true}},
		{name: "an adapter's pod ready", event: adapterPodEvent("update", "True", true), want: Target{Resync: true}},
		{name: "an adapter's pod made ready", event: adapterPodEvent("add", "True", true), want: Target{Resync: true}},
		{name: "an adapter's pod starting", event: adapterPodEvent("update", "False", true), want: Target{Ignored: "adapter pod foo-operator/apiserversource-foos-1234-x7k2p not ready, or going"}},
		{name: "an adapter's pod made", event: adapterPodEvent("add", "", true), want: Target{Ignored: "adapter pod foo-operator/apiserversource-foos-1234-x7k2p not ready, or going"}},
		{name: "an adapter's pod deleted", event: adapterPodEvent("delete", "True", true), want: Target{Ignored: "adapter pod foo-operator/apiserversource-foos-1234-x7k2p not ready, or going"}},
		{name: "another pod", event: adapterPodEvent("update", "True", false), want: Target{Ignored: "kind Pod is not handled"}},
		{name: "a source", event: refEvent("update", "sources.knative.dev/v1", "ApiServerSource", "apiserversources", "foo-operator", "foos"), want: Target{Ignored: "kind ApiServerSource.sources.knative.dev is not handled"}},
		{name: "other kind", event: refEvent("add", "v1", "ConfigMap", "configmaps", "ns", "c"), want: Target{Ignored: "kind ConfigMap is not handled"}},
		{name: "other type", event: func() cloudevents.Event { e := pingEvent(); e.SetType("com.example.thing"); return e }(), want: Target{Ignored: `event type "com.example.thing" is not handled`}},
		{name: "apiserver type with unknown verb", event: func() cloudevents.Event {
			e := fooResourceEvent("add", "ns", "a")
			e.SetType("dev.knative.apiserver.resource.patch")
			return e
		}(), want: Target{Ignored: `event type "dev.knative.apiserver.resource.patch" is not handled`}},
		{name: "no data", event: withData(fooResourceEvent("add", "ns", "a"), "", nil), wantBad: true},
		{name: "data not JSON", event: withData(fooResourceEvent("add", "ns", "a"), "application/json", []byte("{nope")), wantBad: true},
		{name: "data not JSON content type", event: withData(fooResourceEvent("add", "ns", "a"), "text/plain", []byte("{}")), wantBad: true},
		{name: "no name", event: withData(fooResourceEvent("add", "ns", "a"), "application/json", []byte(`{"apiVersion":"samplecontroller.knative.io/v1alpha1","kind":"Foo","metadata":{"namespace":"ns"}}`)), wantBad: true},
		{name: "no namespace", event: withData(fooResourceEvent("add", "ns", "a"), "application/json", []byte(`{"apiVersion":"samplecontroller.knative.io/v1alpha1","kind":"Foo","metadata":{"name":"a"}}`)), wantBad: true},
		{name: "ref without name", event: withData(refEvent("add", fooAPIVersion, "Foo", "foos", "ns", "a"), "application/json", []byte(`{"kind":"Foo","apiVersion":"samplecontroller.knative.io/v1alpha1","namespace":"ns"}`)), wantBad: true},
		{name: "no kind anywhere", event: noExt(withData(fooResourceEvent("add", "ns", "a"), "application/json", []byte(`{"metadata":{"name":"a","namespace":"ns"}}`))), wantBad: true},
		{name: "bad apiVersion", event: withData(fooResourceEvent("add", "ns", "a"), "application/json", []byte(`{"apiVersion":"a/b/c","kind":"Foo","metadata":{"name":"a","namespace":"ns"}}`)), wantBad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDecoder(tc.objects...)
			got, err := decodeAndResolve(d, &tc.event, Sender{})
			if tc.wantBad {
				if !IsBadEvent(err) {
					t.Fatalf("Decode() = %+v, %v, want a BadEventError", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal("Decode() =", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Error("Decode (-want, +got):", diff)
			}
		})
	}
}

func TestDecodeRefReadFailureIsTransient(t *testing.T) {
	d, kc := newDecoder()
	kc.PrependReactor("get", "deployments", func(clientgotesting.Action) (bool, runtime.Object, error) {
		return true, nil, context.DeadlineExceeded
	})
	e := refEvent("update", "apps/v1", "Deployment", "deployments", "ns", "web")
	if _, err := decodeAndResolve(d, &e, Sender{}); err == nil || IsBadEvent(err) {
		t.Errorf("Decode() = %v, want a transient (non-BadEvent) error", err)
	}
}

// withReady gives e's object a generation, the generation its status
// reports, and a Ready condition (none when status is "").
func withReady(e cloudevents.Event, generation, observed int, status, reason string) cloudevents.Event {
	return editObject(e, func(obj map[string]any) {
		obj["metadata"].(map[string]any)["generation"] = generation
		st := map[string]any{"observedGeneration": observed}
		if status != "" {
			st["conditions"] = []any{
				map[string]any{"type": "DeploymentReady", "status": status, "reason": reason},
				map[string]any{"type": "Ready", "status": status, "reason": reason},
			}
		}
		obj["status"] = st
	})
}

// settled are the test Foo's reasons that no reconcile can change.
var settled = []string{"DeploymentRollingOut", "SpecInvalid"}

func TestDecodeSkipNoOp(t *testing.T) {
	update := func(generation, observed int, status, reason string) cloudevents.Event {
		return withReady(fooResourceEvent("update", "ns", "a"), generation, observed, status, reason)
	}
	tests := []struct {
		name     string
		event    cloudevents.Event
		skip     bool
		wantKeys bool
	}{
		{"update already reconciled, Ready", update(2, 2, "True", ""), true, false},
		{"update already reconciled, Ready, skip off", update(2, 2, "True", ""), false, true},
		{"update already reconciled, rolling out (settled)", update(2, 2, "Unknown", "DeploymentRollingOut"), true, false},
		{"update already reconciled, spec invalid (settled)", update(2, 2, "False", "SpecInvalid"), true, false},
		// A reconcile may change it: a label or an annotation forces one.
		{"update already reconciled, name refused", update(2, 2, "False", "DeploymentNotOwned"), true, true},
		{"update already reconciled, no Ready condition", update(2, 2, "", ""), true, true},
		{"update of a new generation", update(3, 2, "True", ""), true, true},
		{"add", withReady(fooResourceEvent("add", "ns", "a"), 1, 1, "True", ""), true, true},
		{"foo delete", fooResourceEvent("delete", "ns", "a"), true, false},
		{"foo delete, skip off", fooResourceEvent("delete", "ns", "a"), false, true},
		{"owned deployment", deploymentResourceEvent("update", "ns", "web", "a"), true, true},
		{"owned deployment deleted", deploymentResourceEvent("delete", "ns", "web", "a"), true, true},
		{"unowned deployment", deploymentResourceEvent("update", "ns", "web", ""), true, false},
		{"reference mode carries no status", refEvent("update", fooAPIVersion, "Foo", "foos", "ns", "a"), true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDecoder()
			d.SkipNoOp, d.Settled = tc.skip, settled
			got, err := decodeAndResolve(d, &tc.event, Sender{})
			if err != nil {
				t.Fatal(err)
			}
			if (len(got.Keys) > 0) != tc.wantKeys {
				t.Errorf("Decode() = %+v, want keys: %v", got, tc.wantKeys)
			}
		})
	}
}

func TestDecodeDeletedDeploymentWakesItsClaimants(t *testing.T) {
	type call struct{ ns, name, holder string }
	tests := []struct {
		name      string
		event     cloudevents.Event
		claimants []types.NamespacedName
		err       error
		wantCall  *call
		wantKeys  []types.NamespacedName
		wantErr   bool
	}{{
		name:      "owned deployment deleted: its Foo and the Foos waiting for its name",
		event:     deploymentResourceEvent("delete", "ns", "web", "a"),
		claimants: key("ns", "b"),
		wantCall:  &call{"ns", "web", "a"},
		wantKeys:  append(key("ns", "a"), key("ns", "b")...),
	}, {
		name:     "nobody waits",
		event:    deploymentResourceEvent("delete", "ns", "web", "a"),
		wantCall: &call{"ns", "web", "a"},
		wantKeys: key("ns", "a"),
	}, {
		name:     "updated, not deleted: the name is not free",
		event:    deploymentResourceEvent("update", "ns", "web", "a"),
		wantKeys: key("ns", "a"),
	}, {
		name:  "not a Foo's: nothing asked",
		event: deploymentResourceEvent("delete", "ns", "web", ""),
	}, {
		name:     "listing fails: retry",
		event:    deploymentResourceEvent("delete", "ns", "web", "a"),
		err:      errors.New("boom"),
		wantCall: &call{"ns", "web", "a"},
		wantErr:  true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDecoder()
			var got *call
			d.Owned[0].OnDelete = func(_ context.Context, ns, name, holder string) ([]types.NamespacedName, error) {
				got = &call{ns, name, holder}
				return tc.claimants, tc.err
			}
			target, err := decodeAndResolve(d, &tc.event, Sender{})
			if (err != nil) != tc.wantErr || IsBadEvent(err) {
				t.Fatalf("Decode() = %v, want a transient error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantCall, got, cmp.AllowUnexported(call{})); diff != "" {
				t.Error("OnDelete call (-want, +got):", diff)
			}
			if diff := cmp.Diff(tc.wantKeys, target.Keys); diff != "" {
				t.Error("keys (-want, +got):", diff)
			}
		})
	}
}

// A Deployment's delete (the Deployment gone) costs the API server one read
// of it in the decoder, and one lookup more only if the decoder's state says
// another Foo of its namespace may wait for the name.
func TestADeletedDeploymentsClaimantsAreLookedUpOnlyWhenOneMayWait(t *testing.T) {
	refused := func(ns, name string) cloudevents.Event {
		return withReady(fooResourceEvent("update", ns, name), 1, 1, "False", "DeploymentNotOwned")
	}
	ready := func(ns, name string) cloudevents.Event {
		return withReady(fooResourceEvent("update", ns, name), 1, 1, "True", "")
	}
	tests := []struct {
		name    string
		listed  []types.NamespacedName // nil: no resync listed yet
		before  []cloudevents.Event
		lookups int
	}{
		{name: "no resync listed yet: nothing known", lookups: 1},
		{name: "listed, nobody waits", listed: []types.NamespacedName{}, lookups: 0},
		{name: "listed, another Foo of the namespace listed", listed: key("ns", "b"), lookups: 1},
		{name: "listed, a Foo of another namespace listed", listed: key("other", "b"), lookups: 0},
		{name: "listed, only the holder listed", listed: key("ns", "a"), lookups: 0},
		{name: "a Foo of the namespace refused its name since", listed: []types.NamespacedName{}, before: []cloudevents.Event{refused("ns", "b")}, lookups: 1},
		{name: "refused, then Ready", listed: []types.NamespacedName{}, before: []cloudevents.Event{refused("ns", "b"), ready("ns", "b")}, lookups: 0},
		{name: "listed, then Ready", listed: key("ns", "b"), before: []cloudevents.Event{ready("ns", "b")}, lookups: 0},
		{name: "refused, then deleted", listed: []types.NamespacedName{}, before: []cloudevents.Event{refused("ns", "b"), fooResourceEvent("delete", "ns", "b")}, lookups: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, kc := newDecoder() // the Deployment is gone
			d.SkipNoOp, d.Settled = true, settled
			lookups := 0
			d.Owned[0].OnDelete = func(context.Context, string, string, string) ([]types.NamespacedName, error) {
				lookups++
				return nil, nil
			}
			if tc.listed != nil {
				d.Listed(tc.listed)
			}
			for _, e := range tc.before {
				if _, err := decodeAndResolve(d, &e, Sender{}); err != nil {
					t.Fatal(err)
				}
			}
			e := deploymentResourceEvent("delete", "ns", "web", "a")
			target, err := decodeAndResolve(d, &e, Sender{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(key("ns", "a"), target.Keys); diff != "" {
				t.Error("keys (-want, +got):", diff)
			}
			if lookups != tc.lookups || len(kc.Actions()) != 1 {
				t.Errorf("lookups = %d and API requests %d, want %d and 1 (its read)", lookups, len(kc.Actions()), tc.lookups)
			}
		})
	}
}

// A delete is believed only once its object is seen gone: one still there
// (a forged delete) or made again by its owner since (a repeated one) costs
// that one read, and nobody is reconciled or looked up, even when another
// Foo of the namespace may wait for the name.
func TestADeleteOfAnObjectNotGoneCostsOneRead(t *testing.T) {
	remade := ownedDeployment("ns", "web", "a")
	remade.UID = "d-web-2"
	foreign := ownedDeployment("ns", "web", "")
	foreign.UID = "d-web-2"
	for name, tc := range map[string]struct {
		objects  []runtime.Object
		failRead bool
		wantKeys []types.NamespacedName
	}{
		"still there: forged":                     {objects: []runtime.Object{ownedDeployment("ns", "web", "a")}},
		"made again by its Foo: repeated":         {objects: []runtime.Object{remade}},
		"gone: believed":                          {wantKeys: append(key("ns", "a"), key("ns", "b")...)},
		"made again by no Foo: its Foo must know": {objects: []runtime.Object{foreign}, wantKeys: append(key("ns", "a"), key("ns", "b")...)},
		"the read fails: believed":                {failRead: true, wantKeys: append(key("ns", "a"), key("ns", "b")...)},
	} {
		t.Run(name, func(t *testing.T) {
			d, kc := newDecoder(tc.objects...)
			if tc.failRead {
				kc.PrependReactor("get", "deployments", func(clientgotesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("boom")
				})
			}
			d.Listed(key("ns", "b")) // b may wait for the name
			lookups := 0
			d.Owned[0].OnDelete = func(context.Context, string, string, string) ([]types.NamespacedName, error) {
				lookups++
				return key("ns", "b"), nil
			}
			e := deploymentResourceEvent("delete", "ns", "web", "a")
			got, err := decodeAndResolve(d, &e, Sender{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantKeys, got.Keys); diff != "" {
				t.Error("keys (-want, +got):", diff)
			}
			if len(tc.wantKeys) == 0 && (got.Ignored == "" || lookups != 0) {
				t.Errorf("Target = %+v after %d lookups, want it ignored with none", got, lookups)
			}
			if n := len(kc.Actions()); n != 1 {
				t.Errorf("%d API requests, want 1: %v", n, kc.Actions())
			}
		})
	}
}

// Decode reads nothing but the event: what needs a read is left to Resolve.
func TestDecodeMakesNoAPIRequest(t *testing.T) {
	d, kc := newDecoder(ownedDeployment("ns", "web", "a"))
	d.Owned[0].OnDelete = func(context.Context, string, string, string) ([]types.NamespacedName, error) {
		t.Error("OnDelete asked by Decode")
		return nil, nil
	}
	for _, e := range []cloudevents.Event{
		deploymentResourceEvent("delete", "ns", "web", "a"),
		refEvent("update", "apps/v1", "Deployment", "deployments", "ns", "web"),
	} {
		got, err := d.Decode(&e, Sender{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Lookup == nil {
			t.Errorf("%s: Decode() = %+v, want a Lookup left to Resolve", e.Type(), got)
		}
	}
	if n := len(kc.Actions()); n != 0 {
		t.Errorf("Decode made %d API requests, want none", n)
	}
}

func TestDecodeIgnoresTheReconcilersOwnWrites(t *testing.T) {
	withRV := func(e cloudevents.Event, rv string) cloudevents.Event {
		return editObject(e, func(obj map[string]any) { obj["metadata"].(map[string]any)["resourceVersion"] = rv })
	}
	tests := []struct {
		name     string
		event    cloudevents.Event
		wantKeys bool
	}{
		{"the version it created", withRV(deploymentResourceEvent("add", "ns", "web", "a"), "7"), false},
		{"a later version: someone else's change", withRV(deploymentResourceEvent("update", "ns", "web", "a"), "8"), true},
		{"an earlier version", withRV(deploymentResourceEvent("update", "ns", "web", "a"), "6"), true},
		{"deleted, even at that version", withRV(deploymentResourceEvent("delete", "ns", "web", "a"), "7"), true},
		{"another Deployment", withRV(deploymentResourceEvent("add", "ns", "db", "a"), "7"), true},
		{"added while the reconciler creates it", withRV(deploymentResourceEvent("add", "ns", "new", "a"), "9"), false},
		{"updated while the reconciler creates it", withRV(deploymentResourceEvent("update", "ns", "new", "a"), "9"), true},
		{"a Foo updated at the version it wrote (its status)", withRV(fooResourceEvent("update", "ns", "a"), "5"), false},
		{"a Foo updated at a later version: someone else's change", withRV(fooResourceEvent("update", "ns", "a"), "6"), true},
		{"a Foo added, created before the reconciler wrote it", fooResourceEvent("add", "ns", "a"), false},
		{"a Foo of that name added, made again since", editObject(fooResourceEvent("add", "ns", "a"), func(obj map[string]any) {
			obj["metadata"].(map[string]any)["uid"] = "u-a2"
		}), true},
		{"another Foo added", fooResourceEvent("add", "ns", "b"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDecoder()
			d.OwnWrites = ownwrites.New(0)
			d.OwnWrites.Wrote(deploymentKind, "ns", "web", "7", "d-web")
			d.OwnWrites.Creating(deploymentKind, "ns", "new") // no answer yet
			d.OwnWrites.Wrote(fooKind, "ns", "a", "5", "u-a")
			got, err := decodeAndResolve(d, &tc.event, Sender{})
			if err != nil {
				t.Fatal(err)
			}
			if (len(got.Keys) > 0) != tc.wantKeys {
				t.Errorf("Decode() = %+v, want keys: %v", got, tc.wantKeys)
			}
		})
	}
}

// An owner's add is a creation the reconciler has not seen, unless it has
// written that owner since (a resync reconciled it first): then the add is
// ignored, and what an earlier add handed off is forgotten. An owner's
// update to a generation its status does not report is a change.
func TestDecodeTellsCreationsAndChangesNotSeen(t *testing.T) {
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	update := func(generation, observed int) cloudevents.Event {
		return withReady(fooResourceEvent("update", "ns", "a"), generation, observed, "True", "")
	}
	deleting := editObject(update(2, 1), func(obj map[string]any) {
		obj["metadata"].(map[string]any)["deletionTimestamp"] = "2026-11-30T00:00:00Z"
	})
	for _, tc := range []struct {
		name                    string
		event                   cloudevents.Event
		written                 bool
		wantCreated, wantChange bool
	}{
		{"a Foo's add", fooResourceEvent("add", "ns", "a"), false, true, false},
		{"a Foo's update to a new generation", update(2, 1), false, false, true},
		{"a Foo's update of a reconciled generation", update(2, 2), false, false, false},
		{"a Foo's update to a new generation, being deleted", deleting, false, false, false},
		{"a Deployment's add", deploymentResourceEvent("add", "ns", "web", "a"), false, false, false},
		{"a Deployment's update", deploymentResourceEvent("update", "ns", "web", "a"), false, false, false},
		{"the add of a Foo written since", fooResourceEvent("add", "ns", "a"), true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDecoder()
			d.OwnWrites = ownwrites.New(0)
			d.Handoff = handoff.New(0)
			d.Handoff.Put(a, []byte(`{"kept":"before"}`))
			if tc.written {
				d.OwnWrites.Wrote(fooKind, "ns", "a", "5", "u-a")
			}
			got, err := decodeAndResolve(d, &tc.event, Sender{InOrder: true})
			if err != nil {
				t.Fatal(err)
			}
			if got.Created != tc.wantCreated || got.Changed != tc.wantChange {
				t.Errorf("Created, Changed = %v, %v, want %v, %v", got.Created, got.Changed, tc.wantCreated, tc.wantChange)
			}
			if !tc.written {
				return
			}
			if got.Ignored == "" || len(got.Keys) != 0 {
				t.Errorf("Decode() = %+v, want it ignored", got)
			}
			if _, ok := d.Handoff.Take(a); ok {
				t.Error("what an earlier add handed off is still kept")
			}
		})
	}
}

// An owner's add event keeps its object for the reconcile (in place of a
// read) only from a sender that delivers in order, and only for an owner
// never reconciled; any other event of that owner forgets it.
func TestDecodeHandsOffWhatMayBeBelieved(t *testing.T) {
	withStatus := func(e cloudevents.Event, observed int, deleting bool) cloudevents.Event {
		return editObject(e, func(obj map[string]any) {
			obj["status"] = map[string]any{"observedGeneration": observed}
			if deleting {
				obj["metadata"].(map[string]any)["deletionTimestamp"] = "2026-11-30T00:00:00Z"
			}
		})
	}
	inOrder := Sender{InOrder: true}
	tests := []struct {
		name  string
		from  Sender
		event cloudevents.Event
		kept  bool // was something kept before: is it still?
		want  bool // is the event's object kept now?
	}{
		{"add of a new Foo, in order", inOrder, fooResourceEvent("add", "ns", "a"), false, true},
		{"add of a new Foo, from a sender not known to keep order", Sender{}, fooResourceEvent("add", "ns", "a"), false, false},
		{"add of a Foo already reconciled", inOrder, withStatus(fooResourceEvent("add", "ns", "a"), 1, false), false, false},
		{"add of a Foo being deleted", inOrder, withStatus(fooResourceEvent("add", "ns", "a"), 0, true), false, false},
		{"a second add before the reconcile: neither", inOrder, fooResourceEvent("add", "ns", "a"), true, false},
		{"an update forgets the add", inOrder, fooResourceEvent("update", "ns", "a"), true, false},
		{"an update already reconciled (ignored) forgets it too", inOrder, withStatus(fooResourceEvent("update", "ns", "a"), 1, false), true, false},
		{"a delete (ignored) forgets it", inOrder, fooResourceEvent("delete", "ns", "a"), true, false},
		{"a Reference-mode event forgets it", inOrder, refEvent("update", fooAPIVersion, "Foo", "foos", "ns", "a"), true, false},
		{"another Foo's event leaves it", inOrder, fooResourceEvent("update", "ns", "b"), true, true},
		{"a Deployment's event leaves it", inOrder, deploymentResourceEvent("update", "ns", "a", "a"), true, true},
	}
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newDecoder()
			d.SkipNoOp = true
			d.Handoff = handoff.New(0)
			before := []byte(`{"kept":"before"}`)
			if tc.kept {
				d.Handoff.Put(a, before)
			}
			if _, err := decodeAndResolve(d, &tc.event, tc.from); err != nil {
				t.Fatal(err)
			}
			got, ok := d.Handoff.Take(a)
			switch {
			case ok != tc.want:
				t.Errorf("kept: %v, want %v", ok, tc.want)
			case ok && tc.kept && !bytes.Equal(got, before):
				t.Errorf("kept %s, want what was kept before", got)
			case ok && !tc.kept && !bytes.Equal(got, tc.event.Data()):
				t.Errorf("kept %s, want the event's data %s", got, tc.event.Data())
			}
		})
	}
}

// TestDecodeRejectsInvalidNames: a namespace or name the API server would
// refuse cannot become a key, whatever the event says: it is a BadEventError
// (400, never retried), and a Reference-mode event naming one reads nothing.
func TestDecodeRejectsInvalidNames(t *testing.T) {
	long := strings.Repeat("a", 254)
	ownedBy := func(e cloudevents.Event, owner string) cloudevents.Event {
		return editObject(e, func(obj map[string]any) {
			refs := obj["metadata"].(map[string]any)["ownerReferences"].([]any)
			refs[0].(map[string]any)["name"] = owner
		})
	}
	tests := []struct {
		name  string
		event cloudevents.Event
		want  string
	}{
		{"foo: namespace with %", fooResourceEvent("add", "a%b", "a"), `event names an invalid namespace "a%b": `},
		{"foo: namespace ..", fooResourceEvent("update", "..", "a"), `event names an invalid namespace "..": `},
		{"foo: namespace upper case", fooResourceEvent("update", "A", "a"), `invalid namespace "A"`},
		{"foo: namespace too long", fooResourceEvent("update", strings.Repeat("n", 64), "a"), `invalid namespace "nnnn`},
		{"foo: name ..", fooResourceEvent("add", "ns", ".."), `event names an invalid Foo name "..": may not be '..'`},
		{"foo: name with %", fooResourceEvent("add", "ns", "a%b"), `invalid Foo name "a%b": may not contain '%'`},
		{"foo: name with /", fooResourceEvent("add", "ns", "a/b"), `invalid Foo name "a/b": may not contain '/'`},
		{"foo: name upper case", fooResourceEvent("delete", "ns", "A"), `invalid Foo name "A"`},
		{"foo: name too long", fooResourceEvent("add", "ns", long), `invalid Foo name "aaaa`},
		{"foo ref: namespace with %", refEvent("add", fooAPIVersion, "Foo", "foos", "a%b", "a"), `invalid namespace "a%b"`},
		{"foo ref: name ..", refEvent("add", fooAPIVersion, "Foo", "foos", "ns", ".."), `invalid Foo name ".."`},
		{"deployment: namespace with %", deploymentResourceEvent("update", "a%b", "web", "a"), `invalid namespace "a%b"`},
		{"deployment: name upper case", deploymentResourceEvent("delete", "ns", "Web", "a"), `invalid Deployment name "Web"`},
		{"deployment: owner reference ..", ownedBy(deploymentResourceEvent("update", "ns", "web", "a"), ".."), `invalid Foo name ".." in its owner reference`},
		{"deployment: owner reference with %", ownedBy(deploymentResourceEvent("update", "ns", "web", "a"), "a%b"), `invalid Foo name "a%b" in its owner reference`},
		{"deployment: owner reference empty", ownedBy(deploymentResourceEvent("update", "ns", "web", "a"), ""), `invalid Foo name "" in its owner reference`},
		{"deployment: owner reference too long", ownedBy(deploymentResourceEvent("update", "ns", "web", "a"), long), `in its owner reference`},
		{"deployment ref: namespace ..", refEvent("update", "apps/v1", "Deployment", "deployments", "..", "web"), `invalid namespace ".."`},
		{"deployment ref: name with %", refEvent("update", "apps/v1", "Deployment", "deployments", "ns", "a%b"), `invalid Deployment name "a%b"`},
		{"deployment ref: no namespace", refEvent("update", "apps/v1", "Deployment", "deployments", "", "web"), `event data has no namespace`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, kc := newDecoder(ownedDeployment("ns", "web", "a"))
			got, err := decodeAndResolve(d, &tc.event, Sender{})
			if !IsBadEvent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode() = %+v, %v, want a BadEventError containing %q", got, err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("reason %q is more than one line", err)
			}
			if len(kc.Actions()) > 0 {
				t.Errorf("Decode read the API server: %v", kc.Actions())
			}
		})
	}
}

// A decoder scoped to one namespace ignores the events that concern owners
// of other namespaces only, and reads nothing for them.
func TestDecodeIgnoresOwnersOutsideItsNamespace(t *testing.T) {
	tests := []struct {
		name  string
		event cloudevents.Event
		want  Target
	}{
		{name: "foo resource add", event: fooResourceEvent("add", "other", "a"), want: Target{Ignored: "namespace other is not reconciled: only ns is"}},
		{name: "foo ref update", event: refEvent("update", fooAPIVersion, "Foo", "foos", "other", "a"), want: Target{Ignored: "namespace other is not reconciled: only ns is"}},
		{name: "owned deployment resource delete", event: deploymentResourceEvent("delete", "other", "web", "a"), want: Target{Ignored: "namespace other is not reconciled: only ns is"}},
		{name: "owned deployment ref", event: refEvent("update", "apps/v1", "Deployment", "deployments", "other", "web"), want: Target{Ignored: "namespace other is not reconciled: only ns is"}},
		{name: "foo of the namespace", event: fooResourceEvent("delete", "ns", "a"), want: Target{Keys: key("ns", "a")}},
		{name: "ping", event: pingEvent(), want: Target{Resync: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, kc := newDecoder(ownedDeployment("other", "web", "a"))
			d.Namespace = "ns"
			got, err := decodeAndResolve(d, &tc.event, Sender{})
			if err != nil {
				t.Fatal("Decode() =", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Error("Decode (-want, +got):", diff)
			}
			if a := kc.Actions(); tc.want.Keys == nil && len(a) > 0 {
				t.Errorf("read %v for an event outside the namespace", a)
			}
		})
	}
}
