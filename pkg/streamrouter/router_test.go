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

package streamrouter

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgotesting "k8s.io/client-go/testing"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	"knative.dev/eventing/pkg/client/clientset/versioned/fake"
	"knative.dev/eventing/pkg/eventfilter"
	"knative.dev/eventing/pkg/eventfilter/subscriptionsapi"

	"github.com/frugal-operator/foo-operator/pkg/streamkeeper"
)

// trigger is a member's Trigger declaring resources (YAML).
func trigger(name, resources string) *eventingv1.Trigger {
	return &eventingv1.Trigger{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "operator-stream",
		Labels:      map[string]string{streamkeeper.MemberLabel: "true"},
		Annotations: map[string]string{streamkeeper.ResourcesAnnotation: resources},
	}}
}

// Two members own Deployments, each those labelled for it.
var (
	foo = trigger("foo-reconciler", `
- {apiVersion: samplecontroller.knative.io/v1alpha1, kind: Foo}
- {apiVersion: apps/v1, kind: Deployment, selector: {matchExpressions: [{key: samplecontroller.knative.io/foo, operator: Exists}]}}
`)
	web = trigger("web-reconciler", `
- {apiVersion: example.frugal-operator.dev/v1alpha1, kind: Web}
- {apiVersion: apps/v1, kind: Deployment, selector: {matchLabels: {example.frugal-operator.dev/web-owned: "true"}}}
`)
	adapterLabels = `{"eventing.knative.dev/source":"apiserver-source-controller","eventing.knative.dev/sourceName":"operators"}`
)

// router returns a router over a fake API server holding triggers, and the
// fake, which counts the lists of Triggers.
func router(t *testing.T, triggers ...*eventingv1.Trigger) (*Router, *fake.Clientset, *int) {
	t.Helper()
	var objs []runtime.Object
	for _, tr := range triggers {
		objs = append(objs, tr)
	}
	ev := fake.NewSimpleClientset(objs...)
	lists := new(int)
	ev.PrependReactor("list", "triggers", func(clientgotesting.Action) (bool, runtime.Object, error) {
		*lists++
		return false, nil, nil
	})
	r, err := New(ev.EventingV1(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return r, ev, lists
}

// send posts an adapter's event of an object of apiVersion and kind, with
// data, to r's HTTP handler as the broker does, and returns the status and
// the streammembers extension of the answer ("" if none).
func send(t *testing.T, r *Router, apiVersion, kind, data string) (int, string) {
	t.Helper()
	p, err := cloudevents.NewHTTP()
	if err != nil {
		t.Fatal(err)
	}
	h, err := cloudevents.NewHTTPReceiveHandler(context.Background(), p, r.Route)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(data))
	for k, v := range map[string]string{
		"Ce-Specversion": "1.0", "Ce-Id": "1", "Ce-Source": "https://10.0.0.1:443",
		"Ce-Type": "dev.knative.apiserver.resource.update", "Content-Type": "application/json",
		"Ce-Apiversion": apiVersion, "Ce-Kind": kind, "Ce-Name": "x", "Ce-Namespace": "y",
	} {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if got := w.Header().Get("Ce-Id"); got != "" && (got != "1" || w.Header().Get("Ce-Kind") != kind) {
		t.Errorf("answered event %s of kind %s, want the event sent, 1 of kind %s", got, w.Header().Get("Ce-Kind"), kind)
	}
	return w.Code, w.Header().Get("Ce-" + Extension)
}

func labelled(labels string) string { return `{"metadata":{"name":"x","labels":` + labels + `}}` }

func TestEachMemberIsSentItsOwnObjects(t *testing.T) {
	r, _, _ := router(t, foo, web)
	for _, c := range []struct {
		name, apiVersion, kind, data string
		want                         string
	}{
		{"a Foo's Deployment", "apps/v1", "Deployment", labelled(`{"samplecontroller.knative.io/foo":"a"}`), ",foo-reconciler,"},
		{"a Web's Deployment", "apps/v1", "Deployment", labelled(`{"example.frugal-operator.dev/web-owned":"true"}`), ",web-reconciler,"},
		{"a Deployment labelled for both", "apps/v1", "Deployment", labelled(`{"samplecontroller.knative.io/foo":"a","example.frugal-operator.dev/web-owned":"true"}`), ",foo-reconciler,web-reconciler,"},
		{"a Deployment labelled for neither", "apps/v1", "Deployment", labelled(`{"app":"x"}`), ""},
		{"a Deployment labelled for another Web", "apps/v1", "Deployment", labelled(`{"example.frugal-operator.dev/web-owned":"false"}`), ""},
		{"a Foo, its data not read", "samplecontroller.knative.io/v1alpha1", "Foo", `{not a Foo`, ",foo-reconciler,"},
		{"a Web", "example.frugal-operator.dev/v1alpha1", "Web", labelled(`{}`), ",web-reconciler,"},
		{"the stream's adapter pod", "v1", "Pod", labelled(adapterLabels), ",foo-reconciler,web-reconciler,"},
		{"another pod", "v1", "Pod", labelled(`{"app":"x"}`), ""},
		{"a CRD, the keeper's", "apiextensions.k8s.io/v1", "CustomResourceDefinition", labelled(`{}`), ""},
		{"a member's Trigger", "eventing.knative.dev/v1", "Trigger", labelled(`{"` + streamkeeper.MemberLabel + `":"true"}`), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, to := send(t, r, c.apiVersion, c.kind, c.data)
			if code != http.StatusOK || to != c.want {
				t.Errorf("answered %d, for %q; want 200, for %q", code, to, c.want)
			}
		})
	}
}

func TestAMemberIsReadWhenItJoinsAndLeaves(t *testing.T) {
	r, ev, lists := router(t, foo)
	webs := labelled(`{"example.frugal-operator.dev/web-owned":"true"}`)
	if _, to := send(t, r, "apps/v1", "Deployment", webs); to != "" {
		t.Fatalf("a Web's Deployment for %q before its member joined", to)
	}
	// A member joined, its Trigger's event not seen yet: the adapter sends
	// only what some member declares, so the router reads them again.
	if _, err := ev.EventingV1().Triggers("operator-stream").Create(context.Background(), web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := *lists
	if _, to := send(t, r, "apps/v1", "Deployment", webs); to != ",web-reconciler," {
		t.Errorf("a Web's Deployment for %q once its member joined, want ,web-reconciler,", to)
	}
	if *lists != before+1 {
		t.Errorf("%d lists for an event no member it knew declared, want 1", *lists-before)
	}
	// A Foo: a member it knows, nothing read.
	before = *lists
	if _, to := send(t, r, "samplecontroller.knative.io/v1alpha1", "Foo", `{}`); to != ",foo-reconciler," || *lists != before {
		t.Errorf("a Foo for %q after %d lists, want ,foo-reconciler, after none", to, *lists-before)
	}
	// It leaves: its Trigger's event reads the members again.
	if err := ev.EventingV1().Triggers("operator-stream").Delete(context.Background(), web.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, to := send(t, r, "eventing.knative.dev/v1", "Trigger", labelled(`{"`+streamkeeper.MemberLabel+`":"true"}`)); code != http.StatusOK || to != "" {
		t.Errorf("a Trigger's event answered %d for %q, want 200 for none", code, to)
	}
	if code, to := send(t, r, "v1", "Pod", labelled(adapterLabels)); code != http.StatusOK || to != ",foo-reconciler," {
		t.Errorf("the adapter pod's event answered %d for %q once Web left, want 200 for ,foo-reconciler,", code, to)
	}
}

// Events waiting for a list share the next one begun after them.
func TestEventsShareAList(t *testing.T) {
	r, _, lists := router(t, foo)
	ctx := context.Background()
	asked := time.Now()
	if err := r.list(ctx, asked); err != nil {
		t.Fatal(err)
	}
	if err := r.list(ctx, asked); err != nil {
		t.Fatal(err)
	}
	if *lists != 1 {
		t.Errorf("%d lists for two events that arrived before the first began, want 1", *lists)
	}
	if err := r.list(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if *lists != 2 {
		t.Errorf("%d lists, want 2: an event that arrived after the last list began needs another", *lists)
	}
}

func TestBadEventsAndFailedListsAreAnswered(t *testing.T) {
	r, ev, _ := router(t, foo)
	if code, _ := send(t, r, "", "", `{}`); code != http.StatusBadRequest {
		t.Errorf("an event with no kind answered %d, want 400 (not sent again)", code)
	}
	if code, _ := send(t, r, "apps/v1", "Deployment", `{not an object`); code != http.StatusBadRequest {
		t.Errorf("a Deployment's event whose data is no object answered %d, want 400", code)
	}
	ev.PrependReactor("list", "triggers", func(clientgotesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the API server is away")
	})
	// No member it knows declares a Web's Deployment: it reads them again.
	if code, _ := send(t, r, "apps/v1", "Deployment", labelled(`{"example.frugal-operator.dev/web-owned":"true"}`)); code != http.StatusInternalServerError {
		t.Errorf("an event answered %d when the members could not be read, want 500 (sent again)", code)
	}
}

// A member's Trigger filter, as the broker applies it, passes the events
// routed to it, and no other.
func TestTheFilterPassesItsMembersEventsOnly(t *testing.T) {
	f := subscriptionsapi.CreateSubscriptionsAPIFilters(zap.NewNop(), []eventingv1.SubscriptionsAPIFilter{Filter("foo")})
	for to, want := range map[string]eventfilter.FilterResult{
		",foo,":                eventfilter.PassFilter,
		",bar,foo,web,":        eventfilter.PassFilter,
		",foo-reconciler,":     eventfilter.FailFilter,
		",bar,":                eventfilter.FailFilter,
		"(not routed, no ext)": eventfilter.FailFilter,
	} {
		e := cloudevents.NewEvent()
		e.SetID("1")
		e.SetSource("https://10.0.0.1:443")
		e.SetType("dev.knative.apiserver.resource.add")
		if !strings.HasPrefix(to, "(") {
			e.SetExtension(Extension, to)
		}
		if got := f.Filter(context.Background(), e); got != want {
			t.Errorf("%s %q: %s, want %s", Extension, to, got, want)
		}
	}
}
