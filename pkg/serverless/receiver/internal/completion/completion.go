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

package completion

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/controller"
	pkgreconciler "knative.dev/pkg/reconciler"
)

// Tracker wraps a controller.Reconciler to learn the outcome of every
// reconcile, so that an event can wait for the keys it enqueued. It forwards
// the LeaderAware methods: the generated reconciler skips every key until it
// is promoted.
type Tracker struct {
	inner controller.Reconciler
	// maxFailures is how many failed reconciles of a key an Awaiting sits
	// through (the workqueue retries them with backoff) before it fails; one
	// if the key has failed that many times in a row already: the
	// workqueue's backoff then grows past the deadline, and a direct adapter
	// would hold every later event behind it.
	maxFailures int

	mu   sync.Mutex
	keys map[string]*keyState
}

type keyState struct {
	started  uint64 // reconciles of this key started so far
	inflight int
	waiters  []*waiter
	// failing is how many reconciles of this key failed in a row.
	failing int
}

type waiter struct {
	w        *Awaiting
	epoch    uint64 // the key's started count when the Awaiting began
	failures int
	// allowed is how many failures the waiter sits through.
	allowed int
}

var (
	_ controller.Reconciler     = (*Tracker)(nil)
	_ pkgreconciler.LeaderAware = (*Tracker)(nil)
)

// New wraps inner. An Awaiting fails once a key's reconcile has failed
// maxFailures times (at least 1) since the Awaiting began.
func New(inner controller.Reconciler, maxFailures int) *Tracker {
	return &Tracker{inner: inner, maxFailures: max(maxFailures, 1), keys: make(map[string]*keyState)}
}

// Reconcile implements controller.Reconciler.
func (t *Tracker) Reconcile(ctx context.Context, key string) error {
	t.mu.Lock()
	s := t.state(key)
	s.started++
	seq := s.started
	s.inflight++
	t.mu.Unlock()

	err := t.inner.Reconcile(ctx, key)
	t.finish(key, seq, err)
	return err
}

// Promote implements reconciler.LeaderAware by forwarding to the wrapped reconciler.
func (t *Tracker) Promote(b pkgreconciler.Bucket, enq func(pkgreconciler.Bucket, types.NamespacedName)) error {
	if la, ok := t.inner.(pkgreconciler.LeaderAware); ok {
		return la.Promote(b, enq)
	}
	return nil
}

// Demote implements reconciler.LeaderAware by forwarding to the wrapped reconciler.
func (t *Tracker) Demote(b pkgreconciler.Bucket) {
	if la, ok := t.inner.(pkgreconciler.LeaderAware); ok {
		la.Demote(b)
	}
}

// succeeded tells whether a reconcile's error means the key is done with: a
// permanent error is reported on the object (status and a Warning event) and
// is not retried, so it is an answer too.
func succeeded(err error) bool {
	if err == nil || controller.IsPermanentError(err) {
		return true
	}
	ok, _ := controller.IsRequeueKey(err)
	return ok
}

func (t *Tracker) finish(key string, seq uint64, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.keys[key]
	s.inflight--
	if controller.IsSkipKey(err) {
		// Not this process's key (see receiver.Spread): nothing was
		// done, and the workqueue does not retry it.
		kept := s.waiters[:0]
		for _, wt := range s.waiters {
			if wt.epoch >= seq {
				kept = append(kept, wt)
			} else {
				wt.w.done(key, err)
			}
		}
		clear(s.waiters[len(kept):])
		s.waiters = kept
		t.gc(key, s)
		return
	}
	ok := succeeded(err)
	if ok {
		s.failing = 0
	} else {
		s.failing++
	}
	kept := s.waiters[:0]
	for _, wt := range s.waiters {
		switch {
		case wt.epoch >= seq:
			// Began after this reconcile started: it waits for a later one.
			kept = append(kept, wt)
		case ok:
			wt.w.done(key, nil)
		case wt.failures+1 >= wt.allowed:
			wt.w.done(key, err)
		default:
			wt.failures++
			kept = append(kept, wt)
		}
	}
	clear(s.waiters[len(kept):])
	s.waiters = kept
	t.gc(key, s)
}

// state returns the key's state, making it. Callers hold t.mu.
func (t *Tracker) state(key string) *keyState {
	s, ok := t.keys[key]
	if !ok {
		s = &keyState{}
		t.keys[key] = s
	}
	return s
}

// gc forgets a key nobody waits for, nothing reconciles and that is not
// failing. Callers hold t.mu.
func (t *Tracker) gc(key string, s *keyState) {
	if s.inflight == 0 && len(s.waiters) == 0 && s.failing == 0 {
		delete(t.keys, key)
	}
}

// Await begins waiting for a reconcile, started from now on, of each key.
// Call it before enqueueing the keys, and call Stop when done with it.
func (t *Tracker) Await(keys []types.NamespacedName) *Awaiting {
	w := &Awaiting{t: t, pending: make(map[string]bool, len(keys)), ch: make(chan struct{})}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		key := k.String()
		if w.pending[key] {
			continue
		}
		w.pending[key] = true
		s := t.state(key)
		allowed := t.maxFailures
		if s.failing >= t.maxFailures {
			allowed = 1
		}
		s.waiters = append(s.waiters, &waiter{w: w, epoch: s.started, allowed: allowed})
	}
	if len(w.pending) == 0 {
		close(w.ch)
	}
	return w
}

// failedError says that a key's reconcile kept failing.
type failedError struct {
	Key string
	Err error
}

func (e *failedError) Error() string {
	return fmt.Sprintf("reconcile of %s failed: %v", e.Key, e.Err)
}

func (e *failedError) Unwrap() error { return e.Err }

// Waiting returns how many Awaitings wait for a reconcile of key.
func (t *Tracker) Waiting(key string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.keys[key]; ok {
		return len(s.waiters)
	}
	return 0
}

// Awaiting waits for the reconciles of a set of keys.
type Awaiting struct {
	t *Tracker
	// Guarded by t.mu.
	pending map[string]bool
	err     error
	ch      chan struct{}
}

// done settles one key. Callers hold w.t.mu.
func (w *Awaiting) done(key string, err error) {
	if !w.pending[key] {
		return
	}
	delete(w.pending, key)
	if err != nil {
		// One failed key fails the Awaiting: stop waiting for the others.
		w.err = &failedError{Key: key, Err: err}
		if len(w.pending) > 0 {
			w.stopLocked()
			return
		}
	}
	if len(w.pending) == 0 {
		close(w.ch)
	}
}

// Wait blocks until every key was reconciled (nil), one kept failing (a
// failedError), or ctx is done (its error).
func (w *Awaiting) Wait(ctx context.Context) error {
	select {
	case <-w.ch:
		w.t.mu.Lock()
		defer w.t.mu.Unlock()
		return w.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stop stops waiting and forgets the keys still pending.
func (w *Awaiting) Stop() {
	w.t.mu.Lock()
	defer w.t.mu.Unlock()
	w.stopLocked()
}

// Pending returns how many keys are not settled yet.
func (w *Awaiting) Pending() int {
	w.t.mu.Lock()
	defer w.t.mu.Unlock()
	return len(w.pending)
}

func (w *Awaiting) stopLocked() {
	if len(w.pending) == 0 {
		return
	}
	for key := range w.pending {
		s := w.t.keys[key]
		kept := s.waiters[:0]
		for _, wt := range s.waiters {
			if wt.w != w {
				kept = append(kept, wt)
			}
		}
		clear(s.waiters[len(kept):])
		s.waiters = kept
		w.t.gc(key, s)
	}
	w.pending = map[string]bool{}
	close(w.ch)
}

// IsSkipped tells whether Wait's error is a key the reconciler skipped
// (controller.NewSkipKey): it was not this process's to reconcile.
func IsSkipped(err error) bool {
	var f *failedError
	return errors.As(err, &f) && controller.IsSkipKey(f.Err)
}

// IsFailure tells whether Wait's error is a failed reconcile (not a deadline).
func IsFailure(err error) bool {
	var f *failedError
	return errors.As(err, &f)
}
