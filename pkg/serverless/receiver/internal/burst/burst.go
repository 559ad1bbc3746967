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
	"maps"
	"slices"
	"sync"
	"time"
)

const (
	// Owners owners created or changed within Window are a burst.
	Owners = 8
	// Window is also the least time between a resync's end (its keys
	// reconciled) and the next burst's resync.
	Window = 2 * time.Second
	// Namespaces is the most namespaces a burst's resync lists one by
	// one; a burst's owners in more namespaces are met by a resync of
	// every namespace.
	Namespaces = 4
)

// Counter counts the creations and changes that events report (the
// receiver's Target.Created and Target.Changed), and says when they are a
// burst, and in which namespaces.
type Counter struct {
	mu         sync.Mutex
	since      time.Time           // the window's start
	n          int                 // creations and changes in the window
	namespaces map[string]struct{} // theirs, up to Namespaces+1
	running    bool                // a resync for a burst is on
	resynced   time.Time           // when the last resync ended
}

// Saw counts a creation or a change in namespace ns seen at now, and tells
// whether a resync should start (then it is running until Done is called),
// and of which namespaces: the window's, or every namespace (none) if they
// are more than Namespaces.
func (b *Counter) Saw(now time.Time, ns string) (start bool, namespaces []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.since) > Window {
		b.restart(now)
	}
	b.n++
	if len(b.namespaces) <= Namespaces {
		if b.namespaces == nil {
			b.namespaces = map[string]struct{}{}
		}
		b.namespaces[ns] = struct{}{}
	}
	if b.running || b.n < Owners || now.Sub(b.resynced) < Window {
		return false, nil
	}
	b.running = true
	if _, all := b.namespaces[""]; len(b.namespaces) <= Namespaces && !all { // "": cluster-scoped owners
		namespaces = slices.Sorted(maps.Keys(b.namespaces))
	}
	return true, namespaces
}

// restart starts a window at now, with nothing in it.
func (b *Counter) restart(now time.Time) {
	b.since, b.n, b.namespaces = now, 0, nil
}

// Listed records that a resync of every namespace (not a burst's) listed by
// now: what was created until then is enqueued.
func (b *Counter) Listed(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resynced = now
	b.restart(now)
}

// Start starts at now a resync for a burst counted elsewhere, unless one is
// running or the last ended less than Window before; it is then running
// until Done is called.
func (b *Counter) Start(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.running || now.Sub(b.resynced) < Window {
		return false
	}
	b.running = true
	return true
}

// Done records that the resync Saw or Start asked for ended at now.
func (b *Counter) Done(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running, b.resynced = false, now
	b.restart(now)
}

// Running tells whether a resync for a burst is on.
func (b *Counter) Running() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running
}

// Counted returns how many creations and changes the window holds.
func (b *Counter) Counted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
