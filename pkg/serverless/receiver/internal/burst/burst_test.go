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

package burst

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// sawMany counts n creations at now in the namespaces given, in turn, and
// returns what the last Saw answered, and whether any earlier one started a
// resync.
func sawMany(c *Counter, now time.Time, n int, namespaces ...string) (start bool, got []string, early bool) {
	for i := range n {
		start, got = c.Saw(now, namespaces[i%len(namespaces)])
		if start && i < n-1 {
			early = true
		}
	}
	return start, got, early
}

func TestABurstStartsAtOwnersWithinTheWindow(t *testing.T) {
	for name, tc := range map[string]struct {
		namespaces []string
		n          int
		wantStart  bool
		want       []string
	}{
		"one short":              {namespaces: []string{"ns"}, n: Owners - 1},
		"one namespace":          {namespaces: []string{"ns"}, n: Owners, wantStart: true, want: []string{"ns"}},
		"two, sorted":            {namespaces: []string{"b", "a"}, n: Owners, wantStart: true, want: []string{"a", "b"}},
		"more than Namespaces":   {namespaces: []string{"a", "b", "c", "d", "e"}, n: Owners, wantStart: true},
		"a cluster-scoped owner": {namespaces: []string{"ns", ""}, n: Owners, wantStart: true},
	} {
		t.Run(name, func(t *testing.T) {
			var c Counter
			start, got, early := sawMany(&c, t0.Add(time.Hour), tc.n, tc.namespaces...)
			if early || start != tc.wantStart {
				t.Fatalf("started %v (before the last: %v), want %v at the %dth", start, early, tc.wantStart, Owners)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Error("namespaces (-want +got):", diff)
			}
		})
	}
}

func TestCreationsFarApartAreNoBurst(t *testing.T) {
	var c Counter
	now := t0.Add(time.Hour)
	for i := range 2 * Owners {
		if start, _ := c.Saw(now.Add(time.Duration(i)*(Window+time.Millisecond)), "ns"); start {
			t.Fatalf("creation %d, each more than %v after the last, started a resync", i, Window)
		}
	}
}

// One burst's resync at a time, and none within Window of the last one's end.
func TestOneResyncAtATimeAndAWindowAfterIt(t *testing.T) {
	var c Counter
	now := t0.Add(time.Hour)
	if start, _, _ := sawMany(&c, now, Owners, "ns"); !start || !c.Running() {
		t.Fatal("no resync started")
	}
	if start, _, _ := sawMany(&c, now, 2*Owners, "ns"); start {
		t.Error("a second resync started while the first was running")
	}
	c.Done(now)
	if c.Running() || c.Counted() != 0 {
		t.Errorf("after Done: running %v, %d counted; want neither", c.Running(), c.Counted())
	}
	if start, _, _ := sawMany(&c, now.Add(Window/2), Owners, "ns"); start {
		t.Error("a resync started within the window after the last one's end")
	}
	if start, _, _ := sawMany(&c, now.Add(2*Window), Owners, "ns"); !start {
		t.Error("no resync after the window")
	}
}

// A resync of every namespace enqueued what was created until it listed.
func TestListedStartsTheCountAgain(t *testing.T) {
	var c Counter
	now := t0.Add(time.Hour)
	sawMany(&c, now, Owners-1, "ns")
	c.Listed(now)
	if got := c.Counted(); got != 0 {
		t.Errorf("%d counted after Listed, want 0", got)
	}
	for i := range Owners {
		if start, _ := c.Saw(now.Add(Window+time.Millisecond), fmt.Sprint("ns-", i%2)); start != (i == Owners-1) {
			t.Errorf("creation %d after the window: started %v", i, start)
		}
	}
}

func TestABurstCountedElsewhereStartsUnlessOneIsOnOrJustEnded(t *testing.T) {
	var c Counter
	now := t0.Add(time.Hour)
	if !c.Start(now) {
		t.Fatal("Start with no resync on = false, want true")
	}
	if c.Start(now) {
		t.Error("Start while a resync is on = true, want false")
	}
	if start, _, _ := sawMany(&c, now, Owners, "ns"); start {
		t.Error("a burst counted here started a resync while one handed over was on")
	}
	c.Done(now)
	if c.Start(now.Add(Window / 2)) {
		t.Errorf("Start %v after a resync ended = true, want false", Window/2)
	}
	if !c.Start(now.Add(Window + time.Millisecond)) {
		t.Errorf("Start %v after a resync ended = false, want true", Window+time.Millisecond)
	}
}
