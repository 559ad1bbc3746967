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

// Package streamrouter names, on each event of the shared stream's adapter,
// the members it is for (docs/shared-stream.md): each member whose Trigger
// declares the event's kind with a selector its object's labels match, or
// every member for the stream's own adapter pod. The broker sends it the
// adapter's events; it answers each with the same event and the extension
// streammembers, which the broker takes in again and each member's Trigger
// filters on (Filter). A Trigger cannot filter on labels: this is how members
// that own the same kind are each sent the events of their own objects only.
package streamrouter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/protocol"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/cloudevents/sdk-go/v2/types"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	eventing "knative.dev/eventing/pkg/client/clientset/versioned/typed/eventing/v1"

	"github.com/frugal-operator/foo-operator/pkg/streamkeeper"
)

// Extension is the CloudEvents extension that names the members an event is
// for: their Triggers' names, each between commas.
const Extension = "streammembers"

// Filter is the filter of a member's Trigger, named member: it passes the
// events routed to that member, and nothing else.
func Filter(member string) eventingv1.SubscriptionsAPIFilter {
	return eventingv1.SubscriptionsAPIFilter{CESQL: fmt.Sprintf("%s LIKE '%%,%s,%%'", Extension, member)}
}

// Router routes the stream's events to its members, read from their
// Triggers: at the first event, on every event of a member's Trigger or of
// the stream's adapter pod, and on an event that no member it knows of
// declares (the adapter watches only what some member or the stream
// declares, so its members changed).
type Router struct {
	triggers eventing.EventingV1Interface
	logger   *zap.Logger

	namespace      string
	adapterPod     entry   // its events are for every member
	memberTriggers entry   // the members' Triggers: a member joined, changed or left
	own            []entry // the stream's own resources, for no member but as above

	members atomic.Pointer[[]member]
	listing sync.Mutex
	listed  time.Time // when the last list of the members began; under listing
}

// New returns a router for the stream's members, read with triggers.
func New(triggers eventing.EventingV1Interface, logger *zap.Logger) (*Router, error) {
	source, err := streamkeeper.Source()
	if err != nil {
		return nil, err
	}
	r := &Router{triggers: triggers, logger: logger, namespace: source.Namespace}
	for _, res := range source.Spec.Resources {
		e, err := entryOf(res)
		if err != nil {
			return nil, fmt.Errorf("the stream's source template: %w", err)
		}
		switch e.kind {
		case "Pod":
			r.adapterPod = e
		case "Trigger":
			r.memberTriggers = e
		}
		r.own = append(r.own, e)
	}
	if r.adapterPod.kind == "" || r.memberTriggers.kind == "" {
		return nil, fmt.Errorf("the stream's source template watches no adapter pod or no Trigger")
	}
	return r, nil
}

type member struct {
	name    string
	entries []entry
}

// entry is one resource an ApiServerSource watches.
type entry struct {
	apiVersion, kind string
	selector         labels.Selector
}

func entryOf(r sourcesv1.APIVersionKindSelector) (entry, error) {
	s := labels.Everything()
	if r.LabelSelector != nil {
		var err error
		if s, err = metav1.LabelSelectorAsSelector(r.LabelSelector); err != nil {
			return entry{}, fmt.Errorf("%s %s: %w", r.APIVersion, r.Kind, err)
		}
	}
	return entry{r.APIVersion, r.Kind, s}, nil
}

// object is what an event says of its object: its kind, and its labels, read
// from its data only when a selector needs them.
type object struct {
	apiVersion, kind string
	data             []byte
	labels           labels.Set
	err              error
	read             bool
}

func (o *object) is(e entry) (bool, error) {
	if e.apiVersion != o.apiVersion || e.kind != o.kind {
		return false, nil
	}
	if e.selector.Empty() {
		return true, nil
	}
	if !o.read {
		o.read = true
		var obj struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(o.data, &obj); err != nil {
			o.err = fmt.Errorf("its data is not a Kubernetes object: %w", err)
		}
		o.labels = obj.Metadata.Labels
	}
	if o.err != nil {
		return false, o.err
	}
	return e.selector.Matches(o.labels), nil
}

// Route answers an event of the stream's adapter with the same event named
// for its members, or with no event if it is for none; 400 if it is no
// ApiServerSource event (the broker does not send it again), 500 if the
// members could not be read (it does).
func (r *Router) Route(ctx context.Context, e cloudevents.Event) (*cloudevents.Event, protocol.Result) {
	arrived := time.Now()
	o := &object{data: e.Data()}
	o.apiVersion, _ = types.ToString(e.Extensions()["apiversion"])
	o.kind, _ = types.ToString(e.Extensions()["kind"])
	if o.apiVersion == "" || o.kind == "" {
		return nil, cehttp.NewResult(http.StatusBadRequest, "event %s from %s has no apiversion or kind extension: not an ApiServerSource event", e.ID(), e.Source())
	}
	to, err := r.route(ctx, o, arrived)
	var bad *badEvent
	switch {
	case errors.As(err, &bad):
		return nil, cehttp.NewResult(http.StatusBadRequest, "event %s: %v", e.ID(), err)
	case err != nil:
		r.logger.Error("Failed to read the stream's members", zap.Error(err))
		return nil, cehttp.NewResult(http.StatusInternalServerError, "%v", err)
	case len(to) == 0:
		return nil, nil
	}
	out := e.Clone()
	out.SetExtension(Extension, ","+strings.Join(to, ",")+",")
	return &out, nil
}

// badEvent is an event the router cannot read.
type badEvent struct{ err error }

func (b *badEvent) Error() string { return b.err.Error() }

// route returns the names of the members o's event is for.
func (r *Router) route(ctx context.Context, o *object, arrived time.Time) ([]string, error) {
	for _, own := range r.own {
		ok, err := o.is(own)
		switch {
		case err != nil:
			return nil, &badEvent{err}
		case !ok:
			continue
		case own.kind == r.memberTriggers.kind:
			return nil, r.list(ctx, arrived)
		case own.kind == r.adapterPod.kind:
			// A new adapter: everything is sent again, members' too.
			if err := r.list(ctx, arrived); err != nil {
				return nil, err
			}
			var all []string
			for _, m := range *r.members.Load() {
				all = append(all, m.name)
			}
			return all, nil
		default:
			return nil, nil
		}
	}
	to, err := r.match(o)
	if err != nil || len(to) > 0 {
		return to, err
	}
	if err := r.list(ctx, arrived); err != nil {
		return nil, err
	}
	return r.match(o)
}

// match returns the members that declare o.
func (r *Router) match(o *object) ([]string, error) {
	ms := r.members.Load()
	if ms == nil {
		return nil, nil
	}
	var to []string
	for _, m := range *ms {
		for _, e := range m.entries {
			ok, err := o.is(e)
			if err != nil {
				return nil, &badEvent{err}
			}
			if ok {
				to = append(to, m.name)
				break
			}
		}
	}
	return to, nil
}

// list reads the members from their Triggers, unless a list began after
// since: the events waiting share the next list begun after them. A Trigger
// whose declaration does not parse is no member (the stream-keeper leaves it
// out of the source and says why on it).
func (r *Router) list(ctx context.Context, since time.Time) error {
	r.listing.Lock()
	defer r.listing.Unlock()
	if r.listed.After(since) {
		return nil
	}
	began := time.Now()
	triggers, err := r.triggers.Triggers(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: streamkeeper.MemberLabel + "=true"})
	if err != nil {
		return fmt.Errorf("listing the members' Triggers: %w", err)
	}
	ms := make([]member, 0, len(triggers.Items))
	for i := range triggers.Items {
		tr := &triggers.Items[i]
		m, err := memberOf(tr)
		if err != nil {
			r.logger.Warn("A Trigger labelled as a member is no member", zap.String("trigger", tr.Name), zap.Error(err))
			continue
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
	r.members.Store(&ms)
	r.listed = began
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.name
	}
	r.logger.Info("Read the stream's members", zap.Strings("members", names))
	return nil
}

func memberOf(tr *eventingv1.Trigger) (member, error) {
	rs, err := streamkeeper.Declared(tr)
	if err != nil {
		return member{}, err
	}
	m := member{name: tr.Name}
	for _, res := range rs {
		e, err := entryOf(res)
		if err != nil {
			return member{}, err
		}
		m.entries = append(m.entries, e)
	}
	return m, nil
}
