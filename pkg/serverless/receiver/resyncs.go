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
	"context"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/logging"

	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver/internal/burst"
)

// KeyLister returns the keys a resync reconciles (work): every key that may
// need work, of every namespace, or of namespaces only if any are given (a
// burst's resync). Listing every object is correct too; skipping those that
// provably need nothing makes a resync cheap. Refused are keys whose
// reconcile changes nothing until something else does (a name another owner
// frees, say): not reconciled, but they may wait (see Owned.OnDelete).
type KeyLister func(ctx context.Context, namespaces ...string) (work, refused []types.NamespacedName, err error)

// resyncs schedules the resyncs: once at a cold start, for a ping (see
// Target.Resync), and for each burst of creations or changes (see package
// burst). Each lists the keys through the KeyLister and enqueues them in the
// slow lane, behind events.
type resyncs struct {
	lister  KeyLister
	decoder *Decoder
	impl    *controller.Impl
	metrics *instruments
	// deadline bounds the wait for a burst's resync's reconciles, and for
	// the Spread to settle at a cold start.
	deadline time.Duration
	// spread, if set, shares the keys with other processes (Options.Spread).
	spread Spread
	// settle reconciles keys wherever each is held (Server.settle).
	settle func(ctx context.Context, auth string, w *Written, keys []types.NamespacedName, slow bool) error
	// settleHere reconciles keys in this process (Server.settleHere).
	settleHere func(ctx context.Context, keys []types.NamespacedName, slow bool) error
	// handBurst hands a burst's resync to the process at an address
	// (Server.handBurst).
	handBurst func(ctx context.Context, auth, addr string, namespaces []string) error

	counter burst.Counter
	// bursts carries each burst to forBursts; never full: one burst's
	// resync at a time.
	bursts chan aBurst
}

// aBurst is what a burst's resync needs to know.
type aBurst struct {
	// namespaces to list; none: every namespace.
	namespaces []string
	// auth is the Authorization of the event that made it a burst: the
	// resync sends keys held elsewhere on with it.
	auth string
}

// saw counts a creation or a change in namespace ns, told by an event sent
// with Authorization auth, and asks forBursts for a resync when they are a
// burst.
func (r *resyncs) saw(ns, auth string) {
	if start, namespaces := r.counter.Saw(time.Now(), ns); start {
		r.bursts <- aBurst{namespaces: namespaces, auth: auth}
	}
}

// handed starts the resync of a burst that another process counted, in
// namespaces (every namespace if none), told by an event sent with
// Authorization auth, unless this process no longer holds its key, or a
// burst's resync is on or has just ended here (it covers this one).
func (r *resyncs) handed(namespaces []string, auth string) {
	if _, local := r.spread.Route(burstResyncKey(namespaces)); !local {
		return // moved since it was sent: the next burst's resync covers it
	}
	if r.counter.Start(time.Now()) {
		r.bursts <- aBurst{namespaces: namespaces, auth: auth}
	}
}

// burstResyncKey is the key whose holder runs the resync of a burst in
// namespaces, with a Spread: every process that a burst's events reach
// counts a burst, and only one lists.
func burstResyncKey(namespaces []string) string {
	return "burst-resync/" + strings.Join(namespaces, ",")
}

// list asks the KeyLister for the keys a resync reconciles, of
// namespaces only if any are given, and records how long that took and how
// many there are.
func (r *resyncs) list(ctx context.Context, trigger string, namespaces ...string) ([]types.NamespacedName, error) {
	start := time.Now()
	keys, refused, err := r.lister(ctx, namespaces...)
	if err != nil {
		return nil, err
	}
	r.metrics.resync(ctx, trigger, len(keys), time.Since(start))
	if len(namespaces) == 0 { // every owner that may need work
		r.decoder.Listed(append(slices.Clip(keys), refused...))
	}
	return keys, nil
}

// atStart enqueues the keys the resync lists. Nobody waits for these
// reconciles: an event that arrives meanwhile waits for its own keys only.
// With a Spread, only a process that starts with no other serving
// reconciles them, those it holds (each process that starts then holds its
// share), the rest once it takes them from a pod that Knative still drains
// (forTakeovers); it tells the others when they are reconciled (Resynced).
// One that joins others that serve reconciles nothing: they ran while it
// did not. It lists only if owners track objects (Decoder.Tracked), whose
// owners it learns from the list's dry runs; otherwise it lists nothing,
// and its Decoder looks up the claimants of a delete until a ping's resync
// lists (see waiting).
func (r *resyncs) atStart(ctx context.Context) {
	logger := logging.FromContext(ctx)
	enqueue := true
	if r.spread != nil {
		settleCtx, cancel := context.WithTimeout(ctx, r.deadline)
		enqueue = r.spread.Settle(settleCtx)
		cancel()
	}
	if !enqueue && len(r.decoder.Tracked) == 0 {
		logger.Info("Cold-start resync: other processes run, nothing listed")
		return
	}
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 8, Cap: 10 * time.Second},
		func(context.Context) (bool, error) {
			keys, err := r.list(ctx, "cold_start")
			if err != nil {
				logger.Warnw("Failed to list for the cold-start resync", zap.Error(err))
				return false, nil
			}
			r.counter.Listed(time.Now())
			if !enqueue {
				logger.Infow("Cold-start resync: other processes run, nothing enqueued", zap.Int("keys", len(keys)))
				return true, nil
			}
			if r.spread != nil {
				go r.reconcileHeld(ctx, "Cold-start resync", keys, 1)
				return true, nil
			}
			for _, k := range keys {
				r.impl.EnqueueSlowKey(k)
			}
			logger.Infow("Cold-start resync enqueued", zap.Int("keys", len(keys)))
			return true, nil
		})
	if err != nil && ctx.Err() == nil {
		logger.Errorw("Gave up the cold-start resync; the next ping resync covers it", zap.Error(err))
		if r.spread != nil && enqueue {
			r.spread.Resynced()
		}
	}
}

// reconcileHeld reconciles, in the slow lane, those of keys that this
// process holds, for what (a resync), and once they are reconciled tells
// the Spread that resyncs owed so far are done. A key that moves meanwhile
// is its new holder's to resync (Spread.Resynced). One that keeps failing
// (Options.MaxFailures) ends the wait early: it, and the keys not yet
// reconciled then, stay in the workqueue, but a move of their bucket from
// then on leaves them to the next ping's resync.
func (r *resyncs) reconcileHeld(ctx context.Context, what string, keys []types.NamespacedName, resyncs int) {
	logger := logging.FromContext(ctx)
	held := r.held(keys)
	logger.Infow(what+" enqueued", zap.Int("keys", len(held)), zap.Int("listed", len(keys)))
	if err := r.settleHere(ctx, held, true); err != nil && ctx.Err() == nil {
		logger.Infow(what+": not every key reconciled here", zap.Error(err))
	}
	for range resyncs {
		r.spread.Resynced()
	}
}

// forTakeovers runs a resync each time the Spread takes keys over from a
// process that crashed, or that was on its way out when this one started
// alone, until ctx is done. Nobody waits for these reconciles; only the
// keys this process holds are enqueued.
func (r *resyncs) forTakeovers(ctx context.Context) {
	logger := logging.FromContext(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.spread.TakenOver():
		}
		// Buckets are taken one at a time: once this process leads all
		// its own, one list covers the signals of those taken meanwhile.
		settleCtx, cancel := context.WithTimeout(ctx, r.deadline)
		r.spread.Settle(settleCtx)
		cancel()
		signals := 1
		select {
		case <-r.spread.TakenOver():
			signals++
		default:
		}
		keys, err := r.list(ctx, "takeover")
		if err != nil {
			logger.Warnw("Failed to list for a takeover's resync; the next ping resync covers it", zap.Error(err))
			for range signals {
				r.spread.Resynced()
			}
			continue
		}
		go r.reconcileHeld(ctx, "Took over keys owed a resync", keys, signals)
	}
}

// forBursts runs a resync for each burst of creations or changes (see
// package burst), until ctx is done: it lists the burst's namespaces and
// reconciles their keys, each where it is held; the next burst's resync
// waits until they are reconciled (or AckDeadline passed): until then, a
// resync would list the same keys again. With a Spread, the resync runs in
// the process that holds burstResyncKey; the others hand it the bursts
// they count: one LIST per burst, not one per process, and a burst whose
// events reach only other processes is resynced all the same. Nobody else
// waits for these reconciles; if the list fails, the events' own keys
// still run theirs.
func (r *resyncs) forBursts(ctx context.Context) {
	logger := logging.FromContext(ctx)
	var b aBurst
	for {
		select {
		case <-ctx.Done():
			return
		case b = <-r.bursts:
		}
		if r.spread != nil {
			if addr, local := r.spread.Route(burstResyncKey(b.namespaces)); !local {
				r.handOff(ctx, addr, b)
				r.counter.Done(time.Now())
				continue
			}
		}
		keys, err := r.list(ctx, "burst", b.namespaces...)
		if err != nil {
			r.counter.Done(time.Now())
			logger.Warnw("Failed to list for a burst's resync", zap.Error(err))
			continue
		}
		logger.Infow("Burst resync", zap.Int("keys", len(keys)), zap.Strings("namespaces", b.namespaces))
		waitCtx, cancel := context.WithTimeout(ctx, r.deadline)
		_ = r.settle(waitCtx, b.auth, nil, keys, true) // a key failing, or the deadline: the next burst may resync
		cancel()
		r.counter.Done(time.Now())
	}
}

// handOff hands burst b to the process at addr, which holds its key.
func (r *resyncs) handOff(ctx context.Context, addr string, b aBurst) {
	logger := logging.FromContext(ctx).With(zap.Strings("namespaces", b.namespaces))
	if addr == "" {
		logger.Warn("No process holds a burst's resync yet: the next burst's or ping's resync covers it")
		return
	}
	handCtx, cancel := context.WithTimeout(ctx, r.deadline)
	defer cancel()
	if err := r.handBurst(handCtx, b.auth, addr, b.namespaces); err != nil {
		logger.Warnw("Failed to hand a burst's resync to the holder of its key: the next burst's or ping's resync covers it", zap.Error(err))
		return
	}
	logger.Debugw("Burst resync handed to the holder of its key", zap.String("holder", addr))
}

// held returns the keys this process holds: all of them without a Spread.
func (r *resyncs) held(keys []types.NamespacedName) []types.NamespacedName {
	if r.spread == nil {
		return keys
	}
	var held []types.NamespacedName
	for _, k := range keys {
		if _, local := r.spread.Route(k.String()); local {
			held = append(held, k)
		}
	}
	return held
}
