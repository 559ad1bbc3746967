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
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var deployments = schema.GroupKind{Group: "apps", Kind: "Deployment"}

func TestRecord(t *testing.T) {
	r := New(0)
	r.Wrote(deployments, "ns", "web", "5", "")
	r.Wrote(deployments, "ns", "web", "7", "") // a later write replaces it
	for _, tc := range []struct {
		name           string
		gk             schema.GroupKind
		ns, obj, rv    string
		want, wantThen bool
	}{
		{"the last write, once", deployments, "ns", "web", "7", true, false},
		{"an earlier write", deployments, "ns", "web", "5", false, false},
		{"a later version: someone else's write", deployments, "ns", "web", "8", false, false},
		{"another object", deployments, "ns", "db", "7", false, false},
		{"another kind", schema.GroupKind{Kind: "ConfigMap"}, "ns", "web", "7", false, false},
		{"no version", deployments, "ns", "web", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.IsOwn(tc.gk, tc.ns, tc.obj, tc.rv); got != tc.want {
				t.Errorf("IsOwn() = %v, want %v", got, tc.want)
			}
			if got := r.IsOwn(tc.gk, tc.ns, tc.obj, tc.rv); got != tc.wantThen {
				t.Errorf("IsOwn() again = %v, want %v", got, tc.wantThen)
			}
		})
	}
	var none *Record
	none.Wrote(deployments, "ns", "web", "1", "")
	if none.IsOwn(deployments, "ns", "web", "1") {
		t.Error("a nil Record remembered a write")
	}
}

// An add event tells nothing new once the reconciler has written that
// object, the same one (uid), until that write's event has come.
func TestRecordOutdates(t *testing.T) {
	foos := schema.GroupKind{Group: "samplecontroller.knative.io", Kind: "Foo"}
	r := New(0)
	r.Wrote(foos, "ns", "a", "5", "uid-a")
	r.Wrote(foos, "ns", "b", "6", "")
	for _, tc := range []struct {
		name     string
		obj, uid string
		want     bool
	}{
		{"the object written", "a", "uid-a", true},
		{"another object of that name: made again since", "a", "uid-a2", false},
		{"no uid in the event", "a", "", false},
		{"a write whose answer had no uid", "b", "", false},
		{"an object never written", "c", "uid-c", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.Outdates(foos, "ns", tc.obj, types.UID(tc.uid)); got != tc.want {
				t.Errorf("Outdates() = %v, want %v", got, tc.want)
			}
		})
	}
	if !r.Outdates(foos, "ns", "a", "uid-a") {
		t.Error("Outdates() forgot the write: it is the write's own event that takes it")
	}
	r.IsOwn(foos, "ns", "a", "5")
	if r.Outdates(foos, "ns", "a", "uid-a") {
		t.Error("Outdates() after the write's own event came")
	}
	var none *Record
	if none.Outdates(foos, "ns", "a", "uid-a") {
		t.Error("a nil Record remembered a write")
	}
}

func TestRecordIsBounded(t *testing.T) {
	const max = 100
	r := New(max)
	for i := range 10 * max {
		r.Wrote(deployments, "ns", fmt.Sprint("d-", i), "1", "")
		r.Wrote(deployments, "ns", fmt.Sprint("d-", i), "2", "") // repeats too
	}
	if r.Len() != max || len(r.order) > 2*max {
		t.Errorf("%d writes remembered, %d in order; want %d and at most %d", r.Len(), len(r.order), max, 2*max)
	}
	if r.IsOwn(deployments, "ns", "d-0", "2") || !r.IsOwn(deployments, "ns", fmt.Sprint("d-", 10*max-1), "2") {
		t.Error("the oldest write should be forgotten first, the newest kept")
	}
}

func TestRecordCreating(t *testing.T) {
	r := New(0)
	created := r.Creating(deployments, "ns", "web")
	// The add event can come before the create's answer: any version.
	if !r.IsOwnAdd(deployments, "ns", "web", "9") || !r.IsOwnAdd(deployments, "ns", "web", "") {
		t.Error("an add while the create is in flight is not recognised")
	}
	if r.IsOwn(deployments, "ns", "web", "9") || r.IsOwnAdd(deployments, "ns", "db", "9") {
		t.Error("only an add of that object is: not an update, not another object")
	}
	created("9")
	if !r.IsOwnAdd(deployments, "ns", "web", "9") {
		t.Error("an add after the answer, of the version created, is not recognised")
	}
	if r.IsOwnAdd(deployments, "ns", "web", "9") || r.IsOwnAdd(deployments, "ns", "web", "10") {
		t.Error("once answered, only that version, once, is the reconciler's")
	}
	failed := r.Creating(deployments, "ns", "db")
	failed("") // AlreadyExists, say: someone else's object
	if r.IsOwnAdd(deployments, "ns", "db", "3") || len(r.creating) != 0 {
		t.Errorf("a failed create left a record (%d in flight)", len(r.creating))
	}
	var none *Record
	none.Creating(deployments, "ns", "web")("1")
	if none.IsOwnAdd(deployments, "ns", "web", "1") {
		t.Error("a nil Record remembered a create")
	}
}
