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

// Command knative measures the operator on real Knative (the one-node
// cluster of hack/cluster) beside the classic informer-based
// k8s.io/sample-controller deployed on the same cluster as a pod, with its
// client raised to the reconciler's limit (200 requests/s, burst 400). In
// order:
//
//  1. every namespace it uses is made first (each namespace made rolls the
//     ApiServerSource adapters), and the Foo operator is in direct wiring (a
//     run that finds the stream watching Foos takes it back first);
//  2. wake-ups from zero: a Foo created while the reconciler has no pod, to
//     its Deployment existing (and, for scale, the same with a pod warm);
//  3. phase 1, one operator in direct wiring: N converged Foos of each kind,
//     then the idle bill over -idle, sampled every second: every pod of the
//     classic, of the Foo reconciler (each counted until it is gone), of
//     Foo's own adapter and of Knative (Serving, Eventing, the broker's data
//     plane): pod-seconds, working set, CPU and requests;
//  4. the direct burst pair: -burst classic Foos, then -burst of ours, each
//     in a fresh namespace, timed to the first reconcile of every Foo, to
//     every Deployment observed by the deployment controller and (ours) to
//     every Foo Ready; our reconciler's requests binned by second from the
//     audit log; the node's CPU by component until the first reconcile of
//     every Foo (cpu.go); then our reconciler set to ACK=queued (events
//     answered once enqueued) and a second pair, ours first, and set back
//     to reconciled;
//  5. phase 2, two operators on the shared stream: the example Bar operator
//     installed, both switched to the stream as test/knative's
//     TestBrokerWiring does, N converged Bars, then the idle bill again with
//     the Bar reconciler, the stream's adapter and dead letters; then one
//     namespace made and deleted, each timed to the stream's adapter rolled
//     out and each member's wake-up;
//  6. the stream burst pair, the other way round: ours, then the classic in
//     a second fresh namespace; then the floor pair twice (floor.go): the
//     classic with the stream carrying its events to our reconciler, which
//     answers them at once, then the classic alone; then alone, then
//     carried: no operator fed by the stream can burst faster than the
//     classic carried;
//  7. what one more operator costs, the break-even number of operators, and
//     results.md and results.json (with the data of chart.png, which
//     hack/bench-knative.sh draws).
//
// -pairs names the burst pairs to make (direct, queued, stream, floor; all
// by default): one pair alone takes about ten minutes.
//
// Foos ask for 0 replicas: a one-node cluster cannot run thousands of pods.
// The classic's bursts are deleted once timed: the sample-controller
// resyncs every Foo every 30 s and writes its status, which would load
// every later burst (ours have no periodic work, and stay). A run can be
// started again: objects that exist are left as they are, except a burst's
// namespace, emptied of what an interrupted run left there.
// The cluster is left in stream wiring. hack/bench-knative.sh brings the
// cluster up, installs the operator and runs it; results go to
// bench/results/<time>-knative/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The namespaces the bench makes, all at the start.
const (
	nsWake          = "bench-wake"
	nsCanaries      = "bench-canaries"
	nsOurs          = "bench-ours"
	nsClassic       = "bench-classic"
	nsBars          = "bench-bars"
	nsBurstClassic1 = "burst-classic-1"
	nsBurstDirect   = "burst-ours-direct"
	nsBurstStream   = "burst-ours-stream"
	nsBurstClassic2 = "burst-classic-2"
	nsBurstQueued   = "burst-ours-queued"
	nsBurstClassic3 = "burst-classic-3"
	nsBurstCarried  = "burst-classic-carried"
	nsBurstClassic4 = "burst-classic-4"
	nsBurstClassic5 = "burst-classic-5"
	nsBurstCarried2 = "burst-classic-carried-2"
)

// benchNamespaces are every namespace the bench makes Foos or Bars in.
var benchNamespaces = []string{nsWake, nsCanaries, nsOurs, nsClassic, nsBars, nsBurstClassic1, nsBurstDirect, nsBurstStream, nsBurstClassic2, nsBurstQueued, nsBurstClassic3, nsBurstCarried, nsBurstClassic4, nsBurstClassic5, nsBurstCarried2}

// results is every figure of a run, as results.json holds it.
type results struct {
	Started     time.Time     `json:"started"`
	WakeUps     int           `json:"wakeUps"`
	N           int           `json:"n"`
	IdleSeconds float64       `json:"idleSeconds"`
	Burst       int           `json:"burst"`
	Pairs       []string      `json:"pairs"`
	Notes       []string      `json:"notes,omitempty"`
	FromZero    []float64     `json:"fromZeroSeconds"`
	Warm        []float64     `json:"warmSeconds"`
	Direct      phase         `json:"direct"`
	Stream      phase         `json:"stream"`
	Bursts      []burstResult `json:"bursts,omitempty"`
	// NamespaceChurn is one namespace made and deleted on the stream.
	NamespaceChurn *namespaceChurn `json:"namespaceChurn,omitempty"`
	Cost           cost            `json:"cost"`
	Chart          chart           `json:"chart"`
}

func main() {
	wakeups := flag.Int("wakeups", 5, "wake-ups from zero to time")
	n := flag.Int("n", 1000, "converged Foos of each kind (and Bars) during the idle windows")
	idle := flag.Duration("idle", 10*time.Minute, "each idle window (one per phase); 0: no idle bill, resync pings or namespace churn")
	burst := flag.Int("burst", 1000, "Foos in each burst (0: no burst)")
	pairs := flag.String("pairs", strings.Join(pairNames, ","), "the burst pairs to run, of direct (ACK=reconciled), queued (direct, ACK=queued), stream, and floor (the classic with the stream carrying its events, and without)")
	out := flag.String("out", "", "folder for results.md and results.json")
	flag.Parse()
	r := &results{Started: time.Now().UTC(), WakeUps: *wakeups, N: *n, IdleSeconds: idle.Seconds(), Burst: *burst}
	var err error
	if r.Pairs, err = parsePairs(*pairs); err != nil {
		fmt.Fprintln(os.Stderr, "knative:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), r, *idle, *out); err != nil {
		fmt.Fprintln(os.Stderr, "knative:", err)
		os.Exit(1)
	}
}

// logf prints a line of progress, with the time.
func logf(format string, args ...any) {
	fmt.Printf("%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// run does the whole bench, in the order the package's doc gives. If a
// step fails, what was measured until then is written all the same, with
// the error in its notes.
func run(ctx context.Context, r *results, idle time.Duration, out string) error {
	if err := connect(); err != nil {
		return err
	}
	err := measure(ctx, r, idle)
	if err != nil {
		r.Notes = append(r.Notes, "The run stopped early: "+err.Error())
	}
	if len(r.Direct.Rows) > 0 && len(r.Stream.Rows) > 0 {
		r.Cost = costOf(r.Direct, r.Stream)
		r.Chart = chartOf(r.Cost)
	}
	if werr := write(r, out); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

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
	if r.runs("direct") {
		if err := runBursts(ctx, r, directWiring,
			burstSpec{side: "classic", pair: "direct", order: 1, kind: classicFoo, ns: nsBurstClassic1},
			burstSpec{side: "ours, direct wiring", pair: "direct", order: 2, kind: oursFoo, ns: nsBurstDirect},
		); err != nil {
			return err
		}
	}
	if !r.runs("queued") {
		return nil
	}
	// The same wiring with events answered once enqueued (ours first).
	return runBurstsQueued(ctx, r, directWiring,
		burstSpec{side: "ours, direct wiring, ACK=queued", pair: "direct ACK=queued", order: 1, kind: oursFoo, ns: nsBurstQueued},
		burstSpec{side: "classic", pair: "direct ACK=queued", order: 2, kind: classicFoo, ns: nsBurstClassic3},
	)
}

// pairNames are the burst pairs a run can make, in the order it makes them.
var pairNames = []string{"direct", "queued", "stream", "floor"}

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

// runBurstsQueued runs the bursts as runBursts does, with our reconciler
// answering events once enqueued (ACK=queued), and sets it back.
func runBurstsQueued(ctx context.Context, r *results, w wiring, specs ...burstSpec) error {
	logf("our reconciler answering events once enqueued (ACK=queued)")
	if err := setAck(ctx, "queued"); err != nil {
		return err
	}
	if err := runBursts(ctx, r, w, specs...); err != nil {
		return err
	}
	return setAck(ctx, "reconciled")
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
	if r.runs("stream") {
		if err := runBursts(ctx, r, streamWiring,
			burstSpec{side: "ours, shared stream", pair: "stream", order: 1, kind: oursFoo, ns: nsBurstStream},
			burstSpec{side: "classic", pair: "stream", order: 2, kind: classicFoo, ns: nsBurstClassic2},
		); err != nil {
			return err
		}
	}
	if !r.runs("floor") {
		return nil
	}
	return floorPairs(ctx, r)
}

// floorPairs runs the floor pair twice (floor.go), in turn: the classic
// with the stream carrying its events, then alone; alone, then carried.
func floorPairs(ctx context.Context, r *results) error {
	carried := "classic, the stream carrying its events"
	for _, spec := range []burstSpec{
		{side: carried, pair: "floor", order: 1, kind: classicFoo, ns: nsBurstCarried, carried: true},
		{side: "classic", pair: "floor", order: 2, kind: classicFoo, ns: nsBurstClassic4},
		{side: "classic", pair: "second floor", order: 1, kind: classicFoo, ns: nsBurstClassic5},
		{side: carried, pair: "second floor", order: 2, kind: classicFoo, ns: nsBurstCarried2, carried: true},
	} {
		carrying, err := streamWatches(ctx, carriedAPIVersion, "Foo")
		if err != nil {
			return err
		}
		switch {
		case spec.carried && !carrying:
			logf("the stream carrying the classic's events (floor.go)")
			err = carryClassic(ctx)
		case !spec.carried && carrying:
			logf("the stream as its members have it")
			err = uncarryClassic(ctx)
		}
		if err != nil {
			return err
		}
		if err := runBursts(ctx, r, streamWiring, spec); err != nil {
			return err
		}
	}
	logf("the stream as its members have it")
	return uncarryClassic(ctx)
}
