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
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

var (
	web = types.NamespacedName{Namespace: "ns", Name: "web"}
	db  = types.NamespacedName{Namespace: "ns", Name: "db"}
)

func TestStore(t *testing.T) {
	type op struct {
		do   string // put, forget, take
		key  types.NamespacedName
		obj  string
		want string // what take returns ("" for nothing)
	}
	for _, tc := range []struct {
		name string
		max  int
		ops  []op
		len  int
	}{{
		name: "taken once",
		ops:  []op{{do: "put", key: web, obj: "a"}, {do: "take", key: web, want: "a"}, {do: "take", key: web}},
	}, {
		name: "by key",
		ops:  []op{{do: "put", key: web, obj: "a"}, {do: "put", key: db, obj: "b"}, {do: "take", key: db, want: "b"}},
		len:  1,
	}, {
		name: "forgotten by another event",
		ops:  []op{{do: "put", key: web, obj: "a"}, {do: "forget", key: web}, {do: "take", key: web}},
	}, {
		name: "two puts not taken apart: neither is believed",
		ops:  []op{{do: "put", key: web, obj: "a"}, {do: "put", key: web, obj: "b"}, {do: "take", key: web}},
	}, {
		name: "a put after the take is kept",
		ops:  []op{{do: "put", key: web, obj: "a"}, {do: "take", key: web, want: "a"}, {do: "put", key: web, obj: "b"}, {do: "take", key: web, want: "b"}},
	}, {
		name: "over the bound: not kept",
		max:  3,
		ops:  []op{{do: "put", key: web, obj: "ab"}, {do: "put", key: db, obj: "cd"}, {do: "take", key: db}, {do: "take", key: web, want: "ab"}},
	}, {
		name: "room made by a take is used again",
		max:  3,
		ops:  []op{{do: "put", key: web, obj: "ab"}, {do: "take", key: web, want: "ab"}, {do: "put", key: db, obj: "cde"}},
		len:  1,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(tc.max)
			for i, o := range tc.ops {
				switch o.do {
				case "put":
					buf := []byte(o.obj)
					s.Put(o.key, buf)
					copy(buf, "zzzz") // the Store keeps its own copy
				case "forget":
					s.Forget(o.key)
				case "take":
					got, ok := s.Take(o.key)
					if string(got) != o.want || ok != (o.want != "") {
						t.Errorf("op %d: Take(%v) = %q, %v; want %q", i, o.key, got, ok, o.want)
					}
				}
			}
			if got := s.Len(); got != tc.len {
				t.Errorf("Len() = %d, want %d", got, tc.len)
			}
		})
	}
}

func TestNilStoreHoldsNothing(t *testing.T) {
	var s *Store
	s.Put(web, []byte("a"))
	s.Forget(web)
	if obj, ok := s.Take(web); ok {
		t.Errorf("Take() = %q from a nil Store", obj)
	}
}
