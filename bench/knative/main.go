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
//     every Foo (cpu.go);
//  5. phase 2, two operators on the shared stream: the example Bar operator
//     installed, both switched to the stream as test/knative's
//     TestBrokerWiring does, N converged Bars, then the idle bill again with
//     the Bar reconciler, the stream's adapter and dead letters; then one
//     namespace made and deleted, each timed to the stream's adapter rolled
//     out and each member's wake-up;
//  6. the stream burst pair, the other way round: ours, then the classic in
//     a second fresh namespace;
//  7. what one more operator costs, the break-even number of operators, and
//     results.md and results.json (with the data of chart.png, which
//     hack/bench-knative.sh draws).
//
// -pairs names the burst pairs to make (direct, stream; both by default): one pair alone takes about ten minutes.
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
)

// benchNamespaces are every namespace the bench makes Foos or Bars in.
var benchNamespaces = []string{nsWake, nsCanaries, nsOurs, nsClassic, nsBars, nsBurstClassic1, nsBurstDirect, nsBurstStream, nsBurstClassic2}

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
	pairs := flag.String("pairs", strings.Join(pairNames, ","), "the burst pairs to run, direct and stream")
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
