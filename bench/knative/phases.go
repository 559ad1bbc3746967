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
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// measure runs the steps of the bench.
func measure(ctx context.Context, r *results, idle time.Duration) error {
	for _, ns := range benchNamespaces {
		if err := ensureNamespace(ctx, ns); err != nil {
			return err
		}
	}
	note, err := ensureDirect(ctx)
	if err != nil {
		return err
	}
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
	if err := delivers(ctx, directWiring); err != nil {
		return err
	}
	if err := timeWakeUps(ctx, r); err != nil {
		return err
	}
	if err := directPhase(ctx, r, idle); err != nil {
		return err
	}
	return streamPhase(ctx, r, idle)
}

// timeWakeUps times Foos created while the reconciler is at zero, each
// followed by one created while its pod is warm.
func timeWakeUps(ctx context.Context, r *results) error {
	logf("wake-ups from zero: %d", r.WakeUps)
	// Names of this run: a run started again finds the last one's Foos.
	tag := strconv.FormatInt(time.Now().Unix(), 36)
	for i := range r.WakeUps {
		if err := atZero(ctx, fooReconciler); err != nil {
			return err
		}
		cold, err := createAndTime(ctx, nsWake, fmt.Sprintf("cold-%s-%02d", tag, i))
		if err != nil {
			return err
		}
		logf("  from zero %d: %v", i+1, cold.Round(time.Millisecond))
		warm, err := createAndTime(ctx, nsWake, fmt.Sprintf("warm-%s-%02d", tag, i))
		if err != nil {
			return err
		}
		r.FromZero = append(r.FromZero, cold.Seconds())
		r.Warm = append(r.Warm, warm.Seconds())
	}
	return nil
}

// directPhase is phase 1: the classic and the Foo operator in direct
// wiring, N converged Foos each, the idle bill, then the direct burst pair
// (the classic first).
func directPhase(ctx context.Context, r *results, idle time.Duration) error {
	logf("phase 1, one operator in direct wiring: the classic sample-controller as a pod")
	if err := classicAvailable(ctx); err != nil {
		return err
	}
	logf("%d Foos of each kind", r.N)
	if err := populate(ctx, r.N, []batch{{oursFoo, nsOurs}, {classicFoo, nsClassic}}); err != nil {
		return err
	}
	if err := gone(ctx, 10*time.Minute, fooReconciler); err != nil {
		return err
	}
	if idle > 0 {
		logf("idle for %v", idle)
		var err error
		if r.Direct, err = measureIdle(ctx, "one operator, direct wiring", idle, directGroups()); err != nil {
			return fmt.Errorf("phase 1's idle bill: %w", err)
		}
		logf("a resync ping's wake-up")
		if r.Direct.PingWakes, err = firePings(ctx, fooPing); err != nil {
			return fmt.Errorf("phase 1's ping: %w", err)
		}
	}
	if !r.runs("direct") {
		return nil
	}
	return runBursts(ctx, r, directWiring,
		burstSpec{side: "classic", pair: "direct", order: 1, kind: classicFoo, ns: nsBurstClassic1},
		burstSpec{side: "ours, direct wiring", pair: "direct", order: 2, kind: oursFoo, ns: nsBurstDirect},
	)
}

// streamPhase is phase 2: the Bar operator installed, both operators
// switched to the shared stream, N converged Bars, the idle bill, then the
// stream's burst pairs. It leaves the cluster in stream wiring, the stream
// as its members have it.
func streamPhase(ctx context.Context, r *results, idle time.Duration) error {
	logf("phase 2, two operators on the shared stream: the Bar operator")
	if err := installBar(ctx); err != nil {
		return err
	}
	logf("both operators to the stream (%s)", overlayDir)
	if err := switchToStream(ctx); err != nil {
		return err
	}
	logf("%d Bars", r.N)
	if err := populate(ctx, r.N, []batch{{bar, nsBars}}); err != nil {
		return err
	}
	if err := gone(ctx, 10*time.Minute, fooReconciler, barReconciler, deadLetters); err != nil {
		return err
	}
	if idle > 0 {
		logf("idle for %v", idle)
		var err error
		if r.Stream, err = measureIdle(ctx, "two operators, shared stream", idle, streamGroups()); err != nil {
			return fmt.Errorf("phase 2's idle bill: %w", err)
		}
		logf("the resync pings' wake-ups")
		if r.Stream.PingWakes, err = firePings(ctx, fooPing, barPing); err != nil {
			return fmt.Errorf("phase 2's pings: %w", err)
		}
		logf("a namespace made, then deleted")
		if r.NamespaceChurn, err = churnNamespace(ctx, fooReconciler, barReconciler); err != nil {
			return fmt.Errorf("phase 2's namespace: %w", err)
		}
	}
	if !r.runs("stream") {
		return nil
	}
	return runBursts(ctx, r, streamWiring,
		burstSpec{side: "ours, shared stream", pair: "stream", order: 1, kind: oursFoo, ns: nsBurstStream},
		burstSpec{side: "classic", pair: "stream", order: 2, kind: classicFoo, ns: nsBurstClassic2},
	)
}

// pairNames are the burst pairs a run can make, in the order it makes them.
var pairNames = []string{"direct", "stream"}

// parsePairs reads -pairs: names of pairNames, separated by commas.
func parsePairs(flag string) ([]string, error) {
	var pairs []string
	for name := range strings.SplitSeq(flag, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if !slices.Contains(pairNames, name) {
			return nil, fmt.Errorf("-pairs: no burst pair %q (the pairs are %s)", name, strings.Join(pairNames, ", "))
		}
		pairs = append(pairs, name)
	}
	return pairs, nil
}

// runs tells whether the run makes the burst pair named pair.
func (r *results) runs(pair string) bool {
	return r.Burst > 0 && slices.Contains(r.Pairs, pair)
}

// runBursts runs each burst in turn in wiring w, keeping its result.
func runBursts(ctx context.Context, r *results, w wiring, specs ...burstSpec) error {
	for _, b := range specs {
		res, err := runBurst(ctx, w, b, r.Burst)
		if err != nil {
			return err
		}
		r.Bursts = append(r.Bursts, res)
	}
	return nil
}

// createAndTime creates one of our Foos and times it to its Deployment.
func createAndTime(ctx context.Context, ns, name string) (time.Duration, error) {
	start := time.Now()
	if _, err := dyn.Resource(oursGVR).Namespace(ns).Create(ctx, oursFoo.object(ns, name), metav1.CreateOptions{}); err != nil {
		return 0, fmt.Errorf("creating Foo %s/%s: %w", ns, name, err)
	}
	err := poll(ctx, 50*time.Millisecond, 5*time.Minute, "the Deployment of "+name, func(ctx context.Context) (bool, error) {
		_, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	return time.Since(start), err
}
