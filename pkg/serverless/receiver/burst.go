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
	"sync"
	"time"
)

// A burst of owners created is met by a resync. Their events come one at a
// time from a direct adapter, or from a broker that waits for each answer,
// and each waits for its own reconcile; a resync lists every owner that
// needs work at once, and the workers reconcile them together. The
// creations' events then find their owners written (Decoder.OwnWrites) and
// are answered at once.
const (
	// BurstCreations creations within BurstWindow are a burst.
	BurstCreations = 8
	// BurstWindow is also the least time between a resync's end and the
	// next burst's resync.
	BurstWindow = 2 * time.Second
)

// burst counts the creations that events report (Target.Created), and says
// when they are a burst.
type burst struct {
	mu       sync.Mutex
	since    time.Time // the window's start
	n        int       // creations in the window
	running  bool      // a resync for a burst is on
	resynced time.Time // when the last resync ended
}

// saw counts a creation seen at now, and tells whether a resync should
// start (then it is running until done is called).
func (b *burst) saw(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.since) > BurstWindow {
		b.since, b.n = now, 0
	}
	b.n++
	if b.running || b.n < BurstCreations || now.Sub(b.resynced) < BurstWindow {
		return false
	}
	b.running = true
	return true
}

// listed records that a resync (a burst's, or another) listed by now: what
// was created until then is enqueued.
func (b *burst) listed(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resynced, b.since, b.n = now, now, 0
}

// done records that the resync saw asked for ended at now.
func (b *burst) done(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.running, b.resynced, b.since, b.n = false, now, now, 0
}
