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

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// burstSpec is one burst of a pair.
type burstSpec struct {
	side  string // who reconciles: the classic, or ours in a wiring
	pair  string // "direct" or "stream"
	order int    // 1 or 2: which side of its pair went first
	kind  kind
	ns    string
}

// burstResult is what a burst took, in seconds from the first create
// (0: not reached).
type burstResult struct {
	Side      string `json:"side"`
	Pair      string `json:"pair"`
	Order     int    `json:"order"`
	Namespace string `json:"namespace"`
	Foos      int    `json:"foos"`
	// CreatedSeconds: the last create answered.
	CreatedSeconds float64 `json:"createdSeconds"`
	// FirstReconcileAllSeconds: every Foo reconciled once (see progress).
	FirstReconcileAllSeconds float64 `json:"firstReconcileAllSeconds"`
	// DeploymentsObservedAllSeconds: every Foo's Deployment's status of its
	// generation, i.e. the deployment controller has synced it.
	DeploymentsObservedAllSeconds float64 `json:"deploymentsObservedAllSeconds"`
	// ReadyAllSeconds: every Foo Ready (ours only).
	ReadyAllSeconds float64 `json:"readyAllSeconds,omitempty"`
	// Progress is sampled about every second.
	Progress []progress `json:"progress"`
	// Audit is our reconciler's requests, by second (ours only).
	Audit *auditTable `json:"audit,omitempty"`
	// CPU is the node's, from the first create to the first reconcile of
	// every Foo.
	CPU *burstCPU `json:"cpu,omitempty"`
}

// done tells whether every milestone of the burst was reached.
func (r *burstResult) done(k kind) bool {
	return r.FirstReconcileAllSeconds > 0 && r.DeploymentsObservedAllSeconds > 0 && (k != oursFoo || r.ReadyAllSeconds > 0)
}

// runBurst creates n Foos at once in the spec's fresh namespace, with the
// cluster prepared (see prepare), and times them; for ours, it then reads
// the reconciler's requests from the audit log, and for the classic
// deletes them again.
func runBurst(ctx context.Context, w wiring, spec burstSpec, n int) (burstResult, error) {
	res := burstResult{Side: spec.side, Pair: spec.pair, Order: spec.order, Namespace: spec.ns, Foos: n}
	b := batch{kind: spec.kind, ns: spec.ns}
	logf("burst of %d Foos: %s (%s pair, %d of 2, in %s); preparing", n, spec.side, spec.pair, spec.order, w.name)
	if err := emptyNamespace(ctx, b); err != nil {
		return res, err
	}
	if err := prepare(ctx, w); err != nil {
		return res, fmt.Errorf("preparing the burst in %s: %w", spec.ns, err)
	}
	var offset int64
	if spec.kind == oursFoo {
		var err error
		if offset, err = controlplane.AuditLogEnd(auditLog); err != nil {
			return res, err
		}
	}
	start, err := timeBurst(ctx, b, n, &res)
	if err != nil {
		return res, err
	}
	if spec.kind != oursFoo {
		// The classic resyncs every Foo every 30 s and writes its status
		// (the sample-controller's informers): left in place, a burst's
		// Foos would load every later burst of the run, and the classic's
		// idle bill would count them.
		return res, emptyNamespace(ctx, b)
	}
	res.Audit, err = ourRequests(ctx, offset, start)
	return res, err
}

// timeBurst creates the n Foos of the batch at once and follows them to
// every milestone, with the node's CPU until the first reconcile of every
// Foo. It returns when the burst started.
func timeBurst(ctx context.Context, b batch, n int, res *burstResult) (time.Time, error) {
	before, err := readCPU()
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the node's CPU: %w", err)
	}
	start := time.Now()
	created := make(chan error, 1)
	go func() { created <- create(ctx, b, n) }()
	if err := follow(ctx, b, n, start, created, res, func() error {
		after, err := readCPU()
		if err == nil {
			res.CPU, err = cpuBetween(ctx, before, after)
		}
		return err
	}); err != nil {
		return start, err
	}
	logf("  every Foo reconciled at %.1f s, every Deployment observed at %.1f s, every Foo Ready at %.1f s",
		res.FirstReconcileAllSeconds, res.DeploymentsObservedAllSeconds, res.ReadyAllSeconds)
	return start, nil
}

// ourRequests is our reconciler's requests in the audit log from offset,
// by second from start, once its pod is gone (its last requests are in the
// log then).
func ourRequests(ctx context.Context, offset int64, start time.Time) (*auditTable, error) {
	if err := gone(ctx, 10*time.Minute, fooReconciler); err != nil {
		return nil, err
	}
	entries, _, err := controlplane.ReadAuditLog(auditLog, offset, reconcilerUser, "")
	if err != nil {
		return nil, err
	}
	return breakdown(entries, start), nil
}

// prepare waits until the deployment controller has no backlog, the
// wiring's adapter delivers (a canary Foo, which wakes the reconciler), and
// the wiring's reconcilers are at zero, their pods gone.
func prepare(ctx context.Context, w wiring) error {
	if err := deploymentsSettled(ctx); err != nil {
		return err
	}
	if err := delivers(ctx, w); err != nil {
		return err
	}
	if err := gone(ctx, 10*time.Minute, w.reconcilers...); err != nil {
		return err
	}
	return deploymentsSettled(ctx) // the canary's
}

// follow samples the burst's namespace every half second until every
// milestone is reached and every create answered, and records when each
// was first seen (after the list that saw it); it calls reconciled when
// every Foo is first seen reconciled.
func follow(ctx context.Context, b batch, n int, start time.Time, created <-chan error, res *burstResult, reconciled func() error) error {
	deadline := start.Add(30 * time.Minute)
	recorded, allCreated := -1.0, false
	for {
		select {
		case err := <-created:
			if err != nil {
				return err
			}
			allCreated, res.CreatedSeconds = true, time.Since(start).Seconds()
		default:
		}
		p, err := progressOf(ctx, b)
		if err == nil {
			p.Seconds = time.Since(start).Seconds()
			all := p.Objects == n
			if reach(&res.FirstReconcileAllSeconds, all && p.Reconciled == n, p.Seconds) {
				if err := reconciled(); err != nil {
					return err
				}
			}
			reach(&res.DeploymentsObservedAllSeconds, all && p.Observed == n, p.Seconds)
			if b.kind == oursFoo {
				reach(&res.ReadyAllSeconds, all && p.Ready == n, p.Seconds)
			}
			finished := allCreated && res.done(b.kind)
			if p.Seconds-recorded >= 1 || finished {
				res.Progress = append(res.Progress, p)
				recorded = p.Seconds
			}
			if finished {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the burst in %s not done within 30 minutes (all created: %v; seconds to all reconciled %.1f, observed %.1f, Ready %.1f; 0: not reached)",
				b.ns, allCreated, res.FirstReconcileAllSeconds, res.DeploymentsObservedAllSeconds, res.ReadyAllSeconds)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// reach sets *at to now the first time cond holds, and tells whether it
// did.
func reach(at *float64, cond bool, now float64) bool {
	if *at == 0 && cond {
		*at = now
		return true
	}
	return false
}
