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

package ownwrites

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// DefaultMax bounds how many writes a Record remembers: at about a hundred
// bytes each, a megabyte. The oldest are forgotten first; forgetting one
// costs a reconcile, never a wrong answer.
const DefaultMax = 10000

// Record remembers the last version of each object a reconciler wrote.
// The zero value is not usable; use New. A nil *Record remembers nothing.
type Record struct {
	max int

	mu sync.Mutex
	rv map[key]version
	// creating counts the creates in flight, by object.
	creating map[key]int
	// order holds the keys in the order they were last written, oldest
	// first, with repeats; a key's stale entries are skipped on eviction.
	order []entry
}

type key struct {
	gk schema.GroupKind
	types.NamespacedName
}

type entry struct {
	key
	rv string
}

// version is an object's version that the reconciler wrote: the object's
// resourceVersion then, and its uid if known.
type version struct {
	rv  string
	uid types.UID
}

// New returns an empty Record remembering at most max writes (DefaultMax
// when max is not positive).
func New(max int) *Record {
	if max <= 0 {
		max = DefaultMax
	}
	return &Record{max: max, rv: map[key]version{}, creating: map[key]int{}}
}

// Wrote records that the reconciler wrote the object of kind gk, whose uid
// is uid ("" if unknown), at resourceVersion rv (from the API server's
// answer to the write).
func (r *Record) Wrote(gk schema.GroupKind, ns, name, rv string, uid types.UID) {
	if r == nil {
		return
	}
	k := key{gk, types.NamespacedName{Namespace: ns, Name: name}}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wrote(k, version{rv, uid})
}

// wrote records k at v, with r.mu held.
func (r *Record) wrote(k key, v version) {
	if v.rv == "" {
		return
	}
	r.rv[k] = v
	r.order = append(r.order, entry{k, v.rv})
	for len(r.rv) > r.max || len(r.order) > 2*r.max {
		oldest := r.order[0]
		r.order = r.order[1:]
		if r.rv[oldest.key].rv == oldest.rv {
			delete(r.rv, oldest.key)
		}
	}
}

// Creating records that the reconciler is creating the object of kind gk:
// until created is called, with the resourceVersion the API server gave it
// ("" if the create failed), its add event, which can arrive before that
// answer, is recognised as reporting that creation (see IsOwnAdd).
func (r *Record) Creating(gk schema.GroupKind, ns, name string) (created func(rv string)) {
	if r == nil {
		return func(string) {}
	}
	k := key{gk, types.NamespacedName{Namespace: ns, Name: name}}
	r.mu.Lock()
	r.creating[k]++
	r.mu.Unlock()
	return func(rv string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.creating[k]--; r.creating[k] <= 0 {
			delete(r.creating, k)
		}
		r.wrote(k, version{rv: rv}) // at once: its add event is recognised throughout
	}
}

// IsOwnAdd tells whether an add event of the object at resourceVersion rv
// reports the reconciler's own creation: one it wrote (see IsOwn), or one in
// flight. The reconcile making the latter sees what was created (its own
// object, or on AlreadyExists the other's, read after it), so the event
// tells it nothing.
func (r *Record) IsOwnAdd(gk schema.GroupKind, ns, name, rv string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	inFlight := r.creating[key{gk, types.NamespacedName{Namespace: ns, Name: name}}] > 0
	r.mu.Unlock()
	return inFlight || r.IsOwn(gk, ns, name, rv)
}

// IsOwn tells whether the object of kind gk at resourceVersion rv is one
// the reconciler wrote, and forgets it: its event comes once.
func (r *Record) IsOwn(gk schema.GroupKind, ns, name, rv string) bool {
	if r == nil || rv == "" {
		return false
	}
	k := key{gk, types.NamespacedName{Namespace: ns, Name: name}}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rv[k].rv != rv {
		return false
	}
	delete(r.rv, k)
	return true
}

// Outdates tells whether the reconciler wrote the object of kind gk, with
// that uid, and that write's event has not come yet (see IsOwn). An add
// event of that object then tells nothing new: the add is the object's
// creation, and the reconcile that wrote it later had read it since.
func (r *Record) Outdates(gk schema.GroupKind, ns, name string, uid types.UID) bool {
	if r == nil || uid == "" {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rv[key{gk, types.NamespacedName{Namespace: ns, Name: name}}].uid == uid
}

// Len returns how many writes are remembered.
func (r *Record) Len() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.rv)
}
