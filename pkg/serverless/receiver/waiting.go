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

	"k8s.io/apimachinery/pkg/types"
)

// waiting is the owners that are not converged for a reason a reconcile
// could change (a name refused while another held it): only when one waits
// in a namespace can an owned object's delete there matter to anyone but its
// own owner, so only then are the owners it wakes looked up (Owned.OnDelete).
//
// It learns from owner events, and from the resync's keys (every owner that
// may need work, which includes every waiting one). Until a resync has
// listed, it knows nothing, and every claimant is looked up. It holds at
// most one entry per owner.
type waiting struct {
	mu     sync.Mutex
	listed bool
	byNS   map[string]map[string]struct{}
	// once makes listedCh, closed when a resync first lists.
	once     sync.Once
	listedCh chan struct{}
}

// listedSignal returns a channel closed once a resync has listed every owner.
func (w *waiting) listedSignal() chan struct{} {
	w.once.Do(func() { w.listedCh = make(chan struct{}) })
	return w.listedCh
}

// set records whether key waits.
func (w *waiting) set(key types.NamespacedName, waits bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	names := w.byNS[key.Namespace]
	if !waits {
		delete(names, key.Name)
		if len(names) == 0 {
			delete(w.byNS, key.Namespace)
		}
		return
	}
	if names == nil {
		if w.byNS == nil {
			w.byNS = map[string]map[string]struct{}{}
		}
		names = map[string]struct{}{}
		w.byNS[key.Namespace] = names
	}
	names[key.Name] = struct{}{}
}

// listedAll records that keys are every owner that may need work, as a resync
// listed them: each may wait.
func (w *waiting) listedAll(keys []types.NamespacedName) {
	for _, k := range keys {
		w.set(k, true)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.listed {
		close(w.listedSignal())
	}
	w.listed = true
}

// mayWaitIn tells whether an owner of ns other than holder may wait.
func (w *waiting) mayWaitIn(ns, holder string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.listed {
		return true
	}
	names := w.byNS[ns]
	_, held := names[holder]
	return len(names) > 1 || (len(names) == 1 && !held)
}
