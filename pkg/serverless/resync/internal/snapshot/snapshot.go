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

// Package snapshot answers the API requests of a reconcile from objects
// listed beforehand, and refuses its writes, counting them: a reconcile run
// over a snapshot tells whether it would write, without writing.
package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
)

// Snapshot holds objects for the transports made Over it.
type Snapshot struct {
	mu    sync.RWMutex
	kinds map[schema.GroupVersionResource]*kind
}

// kind is what the snapshot holds of one resource.
type kind struct {
	apiVersion, kind string
	// ownerLabel labels the objects with their owner's name; owners are the
	// owners (their namespace and name) whose objects carrying it are all
	// held. A LIST requiring ownerLabel to name such owners is answered.
	ownerLabel string
	owners     map[types.NamespacedName]bool
	objects    map[types.NamespacedName]object
}

type object struct {
	raw    []byte
	labels map[string]string
}

// New returns an empty snapshot.
func New() *Snapshot {
	return &Snapshot{kinds: map[schema.GroupVersionResource]*kind{}}
}

// Over returns an http.RoundTripper for JSON clients that answers GETs of
// the objects s holds and the LISTs it can answer whole; every other read
// goes to next, as it would without the snapshot. It refuses every write
// (500) and counts it in writes (if not nil). With a nil next, s holds the
// whole cluster: every read is answered from it (what it lacks is not
// found), which makes it an API server for tests.
func (s *Snapshot) Over(next http.RoundTripper, writes *atomic.Int64) http.RoundTripper {
	return &front{s: s, next: next, writes: writes}
}

type front struct {
	s      *Snapshot
	next   http.RoundTripper
	writes *atomic.Int64
}

// Reset forgets every object (not the writes counted).
func (s *Snapshot) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.kinds)
}

// Kind declares resource, whose objects are of kind gvk, labelled with their owner's name by ownerLabel ("" if not).
func (s *Snapshot) Kind(resource schema.GroupVersionResource, gvk schema.GroupVersionKind, ownerLabel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kinds[resource] == nil {
		s.kinds[resource] = &kind{apiVersion: gvk.GroupVersion().String(), kind: gvk.Kind, ownerLabel: ownerLabel,
			owners: map[types.NamespacedName]bool{}, objects: map[types.NamespacedName]object{}}
	}
}

// Add holds raw, a JSON object of resource (declared by Kind) as a LIST
// returns it (with or without its apiVersion and kind), and returns its key.
func (s *Snapshot) Add(resource schema.GroupVersionResource, raw []byte) (types.NamespacedName, error) {
	// Only what the snapshot reads of it: decoding the whole ObjectMeta
	// (its managed fields) costs more than the rest of a dry run's GET.
	var o struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Namespace string            `json:"namespace"`
			Name      string            `json:"name"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		return types.NamespacedName{}, fmt.Errorf("a listed %s: %w", resource.Resource, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.kinds[resource]
	if k == nil {
		return types.NamespacedName{}, fmt.Errorf("resource %s was not declared", resource)
	}
	if o.Kind == "" && len(raw) > 1 {
		// A GET's answer names its kind; a LIST's items may not.
		head := fmt.Sprintf(`{"apiVersion":%q,"kind":%q`, k.apiVersion, k.kind)
		if rest := bytes.TrimSpace(raw[1:]); len(rest) > 0 && rest[0] != '}' {
			head += ","
		}
		raw = append([]byte(head), raw[1:]...)
	}
	key := types.NamespacedName{Namespace: o.Metadata.Namespace, Name: o.Metadata.Name}
	k.objects[key] = object{raw: raw, labels: o.Metadata.Labels}
	return key, nil
}

// HoldsOwnedBy records that every object of resource labelled with owner's
// name is held: LISTs that select only such objects are answered.
func (s *Snapshot) HoldsOwnedBy(resource schema.GroupVersionResource, owner types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.kinds[resource]; k != nil {
		k.owners[owner] = true
	}
}

// RoundTrip implements http.RoundTripper.
func (f *front) RoundTrip(req *http.Request) (*http.Response, error) {
	s := f.s
	if req.Method != http.MethodGet {
		if f.writes != nil {
			f.writes.Add(1)
		}
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return status(req, apierrs.NewInternalError(fmt.Errorf("a dry run: %s %s is not sent", req.Method, req.URL.Path)))
	}
	r, ok := parsePath(req.URL.Path)
	if ok {
		if resp, answered := s.read(req, r, f.next == nil); answered {
			return resp, nil
		}
	}
	if f.next == nil {
		if !ok || r.name == "" {
			return status(req, apierrs.NewBadRequest(fmt.Sprintf("the snapshot cannot answer %s", req.URL)))
		}
		return status(req, apierrs.NewNotFound(r.resource.GroupResource(), r.name))
	}
	return f.next.RoundTrip(req)
}

// read answers req if the snapshot can.
func (s *Snapshot) read(req *http.Request, r request, whole bool) (*http.Response, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	k := s.kinds[r.resource]
	q := req.URL.Query()
	if k == nil || r.subresource != "" || q.Get("watch") != "" || q.Get("fieldSelector") != "" {
		return nil, false
	}
	if r.name != "" {
		o, held := k.objects[types.NamespacedName{Namespace: r.namespace, Name: r.name}]
		if !held {
			return nil, false
		}
		return respond(req, http.StatusOK, o.raw), true
	}
	sel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil || (!whole && !k.holdsAll(r.namespace, sel)) {
		return nil, false
	}
	var keys []types.NamespacedName
	for key, o := range k.objects {
		if (r.namespace == "" || key.Namespace == r.namespace) && sel.Matches(labels.Set(o.labels)) {
			keys = append(keys, key)
		}
	}
	// As the API server pages: by key, continuing after the last one.
	slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	if after := q.Get("continue"); after != "" {
		keys = keys[sort.Search(len(keys), func(i int) bool { return keys[i].String() > after }):]
	}
	cont := ""
	if limit, _ := strconv.Atoi(q.Get("limit")); limit > 0 && limit < len(keys) {
		keys = keys[:limit]
		cont = keys[limit-1].String()
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"apiVersion":%q,"kind":%q,"metadata":{"continue":%q},"items":[`, k.apiVersion, k.kind+"List", cont)
	for i, key := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(k.objects[key].raw)
	}
	b.WriteString("]}")
	return respond(req, http.StatusOK, b.Bytes()), true
}

// holdsAll tells whether every object of namespace ns that sel selects is
// held: sel requires the owner label to name owners whose objects are.
func (k *kind) holdsAll(ns string, sel labels.Selector) bool {
	if k.ownerLabel == "" || ns == "" {
		return false
	}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		if r.Key() != k.ownerLabel {
			continue
		}
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		all := true
		for _, v := range r.Values().UnsortedList() {
			all = all && k.owners[types.NamespacedName{Namespace: ns, Name: v}]
		}
		if all {
			return true
		}
	}
	return false
}

// request is what a request's path names.
type request struct {
	resource                     schema.GroupVersionResource
	namespace, name, subresource string
}

// parsePath reads an API path: /api/v1/... or /apis/GROUP/VERSION/...,
// then [namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]].
func parsePath(path string) (request, bool) {
	var r request
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		r.resource.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		r.resource.Group, r.resource.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return r, false
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		r.namespace, parts = parts[1], parts[2:]
	}
	if len(parts) > 3 {
		return r, false
	}
	r.resource.Resource = parts[0]
	if len(parts) > 1 {
		r.name = parts[1]
	}
	if len(parts) > 2 {
		r.subresource = parts[2]
	}
	return r, true
}

func respond(req *http.Request, code int, body []byte) *http.Response {
	return &http.Response{
		StatusCode:    code,
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// status answers req with err's Status.
func status(req *http.Request, err *apierrs.StatusError) (*http.Response, error) {
	st := err.ErrStatus
	st.APIVersion, st.Kind = "v1", "Status"
	body, merr := json.Marshal(st)
	if merr != nil {
		return nil, merr
	}
	return respond(req, int(st.Code), body), nil
}
