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

package uncached

import (
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Hints holds the objects that events carried (ApiServerSource in Resource
// mode sends the whole object, in watch order), so that the next Get of each
// is answered from the event instead of the API server. Such an object is as
// fresh as an informer's cache would be after the same watch event; a hint
// is used once, and one older than maxAge is not used at all, so a reconcile
// that no event preceded still reads the API server.
type Hints[T metav1.Object] struct {
	maxAge time.Duration
	now    func() time.Time

	mu sync.Mutex
	m  map[string]hint[T]
}

type hint[T metav1.Object] struct {
	obj     T
	deleted bool
	at      time.Time
}

// NewHints returns an empty store whose hints last maxAge.
func NewHints[T metav1.Object](maxAge time.Duration) *Hints[T] {
	return &Hints[T]{maxAge: maxAge, now: time.Now, m: map[string]hint[T]{}}
}

// Put records obj, as it was when an event was sent for it; deleted records
// that the event was its deletion. An older version than the one held (by
// resourceVersion) is dropped: events may be delivered again, out of order.
func (h *Hints[T]) Put(obj T, deleted bool) {
	key := obj.GetNamespace() + "/" + obj.GetName()
	h.mu.Lock()
	defer h.mu.Unlock()
	if old, ok := h.m[key]; ok && newer(old.obj.GetResourceVersion(), obj.GetResourceVersion()) {
		return
	}
	h.m[key] = hint[T]{obj: obj, deleted: deleted, at: h.now()}
}

// take returns and forgets the hint for ns/name, if there is a fresh one.
func (h *Hints[T]) take(ns, name string) (obj T, deleted, ok bool) {
	if h == nil {
		return obj, false, false
	}
	key := ns + "/" + name
	h.mu.Lock()
	defer h.mu.Unlock()
	hi, ok := h.m[key]
	if !ok {
		return obj, false, false
	}
	delete(h.m, key)
	if h.now().Sub(hi.at) > h.maxAge {
		return obj, false, false
	}
	return hi.obj, hi.deleted, true
}

// Len returns how many hints are held.
func (h *Hints[T]) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m)
}

// newer tells whether resourceVersion a is newer than b. Resource versions
// are opaque, but etcd's are integers: when either is not, b wins.
func newer(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x > y
}
