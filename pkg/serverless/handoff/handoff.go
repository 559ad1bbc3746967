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

package handoff

import (
	"bytes"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultMaxBytes bounds the bytes a Store holds: a burst's worth of small
// objects. Past it, objects are not kept (their reconciles read).
const DefaultMaxBytes = 4 << 20

// Store holds objects (their JSON) by key until taken. A nil *Store holds
// nothing.
type Store struct {
	maxBytes int

	mu    sync.Mutex
	objs  map[types.NamespacedName][]byte
	bytes int
}

// New returns an empty Store holding at most maxBytes of objects
// (DefaultMaxBytes when maxBytes is not positive).
func New(maxBytes int) *Store {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return &Store{maxBytes: maxBytes, objs: map[types.NamespacedName][]byte{}}
}

// Put keeps a copy of obj, the JSON of key's object, for the next Take. If
// one is kept already, two events were not taken apart: both are
// forgotten, and the reconcile reads. An object over the bound is not kept.
func (s *Store) Put(key types.NamespacedName, obj []byte) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objs[key]; ok {
		s.forgetLocked(key)
		return
	}
	if s.bytes+len(obj) > s.maxBytes {
		return
	}
	s.objs[key] = bytes.Clone(obj)
	s.bytes += len(obj)
}

// Forget drops what is kept for key: an event said something about it that
// the kept object may not show.
func (s *Store) Forget(key types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.forgetLocked(key)
	s.mu.Unlock()
}

func (s *Store) forgetLocked(key types.NamespacedName) {
	s.bytes -= len(s.objs[key])
	delete(s.objs, key)
}

// Take returns what is kept for key, and forgets it.
func (s *Store) Take(key types.NamespacedName) ([]byte, bool) {
	if s == nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objs[key]
	if ok {
		s.forgetLocked(key)
	}
	return obj, ok
}

// Len returns how many objects are kept.
func (s *Store) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.objs)
}
