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

package receiver

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// A burst of owners created or changed is met by a resync. Their events
// come one at a time from a direct adapter, or from a broker that waits for
// each answer, and each waits for its own reconcile; a resync lists every
// owner that needs work at once, and the workers reconcile them together. It
// lists the namespaces of the burst's owners only (if few): its cost is the
// burst's, not the rest of the cluster's. The creations' events then find
// their owners written (Decoder.OwnWrites) and are answered at once; a
// change's event still runs a reconcile of its owner (the resync's own, if
// that one is still queued), which then writes nothing. It lasts until
// what it listed is reconciled: a resync before then would list the same
// owners again.
const (
	// BurstOwners owners created or changed within BurstWindow are a burst.
	BurstOwners = 8
	// BurstWindow is also the least time between a resync's end (its keys
	// reconciled) and the next burst's resync.
	BurstWindow = 2 * time.Second
	// BurstNamespaces is the most namespaces a burst's resync lists one by
	// one; a burst's owners in more namespaces are met by a resync of
	// every namespace.
	BurstNamespaces = 4
)

// burst counts the creations and changes that events report
// (Target.Created, Target.Changed), and says when they are a burst, and in
// which namespaces.
type burst struct {
	mu         sync.Mutex
	since      time.Time           // the window's start
	n          int                 // creations and changes in the window
	namespaces map[string]struct{} // theirs, up to BurstNamespaces+1
	running    bool                // a resync for a burst is on
	resynced   time.Time           // when the last resync ended
}

// saw counts a creation or a change in namespace ns seen at now, and tells
// whether a resync should start (then it is running until done is called),
// and of which namespaces: the window's, or every namespace (none) if they
// are more than BurstNamespaces.
func (b *burst) saw(now time.Time, ns string) (start bool, namespaces []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.since) > BurstWindow {
		b.restart(now)
	}
	b.n++
	if len(b.namespaces) <= BurstNamespaces {
		if b.namespaces == nil {
			b.namespaces = map[string]struct{}{}
		}
		b.namespaces[ns] = struct{}{}
	}
	if b.running || b.n < BurstOwners || now.Sub(b.resynced) < BurstWindow {
		return false, nil
	}
	b.running = true
	if _, all := b.namespaces[""]; len(b.namespaces) <= BurstNamespaces && !all { // "": cluster-scoped owners
		namespaces = slices.Sorted(maps.Keys(b.namespaces))
	}
	return true, namespaces
}

// restart starts a window at now, with nothing in it.
func (b *burst) restart(now time.Time) {
	b.since, b.n, b.namespaces = now, 0, nil
}

// listed records that a resync of every namespace (not a burst's) listed by
// now: what was created until then is enqueued.
func (b *burst) listed(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resynced = now
	b.restart(now)
}

// done records that the resync saw asked for ended at now.
func (b *burst) done(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running, b.resynced = false, now
	b.restart(now)
}
