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
// cluster of hack/cluster) beside the classic k8s.io/sample-controller as a
// pod, its client raised to the reconciler's limit (200 requests/s, burst
// 400); hack/bench-knative.sh installs both and runs it. In order: the
// namespaces; wake-ups, from zero and warm; phase 1, the Foo operator alone
// in direct wiring: N converged Foos of each controller, the idle bill and
// the resync ping's wake-up (idle.go), then the direct burst pair, the
// autoscaled one (our reconciler on zero to three pods, config/scale-out's
// way, beside the classic again) and the three-pods one (three forced);
// phase 2,
// the Foo and Bar operators on the shared stream, switched as test/knative's
// TestBrokerWiring does: the wake-ups again, through the stream, N Bars, the
// idle bill and the pings again, then the stream burst pair and its
// autoscaled one; last, what one more operator costs (cost.go).
//
// A burst (burst.go) is -burst Foos created at once in a namespace of its
// own, once no Deployment waits for the deployment controller, the adapter
// delivers (a canary Foo) and our reconciler has no pod. Foos ask for 0
// replicas: one node cannot run thousands of pods. A run can be started
// again: what exists is kept, a burst's namespace emptied.
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

// The namespaces the bench makes Foos or Bars in, all at the start.
const (
	nsWake, nsCanaries, nsOurs, nsClassic, nsBars = "bench-wake", "bench-canaries", "bench-ours", "bench-classic", "bench-bars"
	nsBurstClassic1, nsBurstDirect                = "burst-classic-1", "burst-ours-direct"
	nsBurstStream, nsBurstClassic2                = "burst-ours-stream", "burst-classic-2"
	nsBurstScaled, nsBurstClassic3                = "burst-ours-autoscaled", "burst-classic-3"
	nsBurstForced, nsBurstClassic4                = "burst-ours-three-pods", "burst-classic-4"
	nsBurstStreamScaled, nsBurstClassic5          = "burst-ours-stream-autoscaled", "burst-classic-5"
)

var (
	benchNamespaces = []string{nsWake, nsCanaries, nsOurs, nsClassic, nsBars, nsBurstClassic1, nsBurstDirect, nsBurstStream, nsBurstClassic2, nsBurstScaled, nsBurstClassic3, nsBurstForced, nsBurstClassic4, nsBurstStreamScaled, nsBurstClassic5}
	pairNames       = []string{"direct", "autoscaled", "three-pods", "stream", "stream-autoscaled"}
)

// results is every figure of a run, as results.json holds it.
type results struct {
	Started     time.Time `json:"started"`
	WakeUps     int       `json:"wakeUps"`
	N           int       `json:"n"`
	IdleSeconds float64   `json:"idleSeconds"`
	Burst       int       `json:"burst"`
	// UntilReconciled ends each burst at the first reconcile of every Foo.
	UntilReconciled bool      `json:"untilReconciled,omitempty"`
	Pairs           []string  `json:"pairs"`
	Notes           []string  `json:"notes,omitempty"`
	FromZero        []float64 `json:"fromZeroSeconds"`
	Warm            []float64 `json:"warmSeconds"`
	// The same through the shared stream (phase 2); none in runs before
	// the stream's were timed.
	StreamFromZero []float64     `json:"streamFromZeroSeconds,omitempty"`
	StreamWarm     []float64     `json:"streamWarmSeconds,omitempty"`
	Direct         phase         `json:"direct"`
	Stream         phase         `json:"stream"`
	Bursts         []burstResult `json:"bursts,omitempty"`
	Cost           cost          `json:"cost"`
}

func main() {
	r := &results{Started: time.Now().UTC()}
	flag.IntVar(&r.WakeUps, "wakeups", 5, "wake-ups from zero to time in each wiring")
	flag.IntVar(&r.N, "n", 1000, "converged Foos of each controller, and Bars, during the idle windows")
	idle := flag.Duration("idle", 10*time.Minute, "each phase's idle window (0: no idle bill or pings)")
	flag.IntVar(&r.Burst, "burst", 1000, "Foos in each burst (0: no burst)")
	flag.BoolVar(&r.UntilReconciled, "until-reconciled", false, "end each burst at the first reconcile of every Foo and delete its objects then, "+
		"for bursts larger than the deployment controller observes in minutes (5000 Foos: about 20 minutes a side)")
	pairs := flag.String("pairs", strings.Join(pairNames, ","), "the burst pairs to make, of "+strings.Join(pairNames, ", "))
	out := flag.String("out", "", "folder for results.md and results.json")
	flag.Parse()
	r.IdleSeconds, r.Pairs = idle.Seconds(), strings.Split(*pairs, ",")
	if i := slices.IndexFunc(r.Pairs, func(p string) bool { return !slices.Contains(pairNames, p) }); i >= 0 {
		fmt.Fprintf(os.Stderr, "knative: -pairs: no burst pair %q (the pairs are %s)\n", r.Pairs[i], strings.Join(pairNames, ", "))
		os.Exit(2)
	}
	err := connect()
	if err == nil {
		if err = r.measure(context.Background(), *idle); err != nil {
			r.Notes = append(r.Notes, "The run stopped early: "+err.Error())
		}
		if len(r.Direct.Rows) > 0 && len(r.Stream.Rows) > 0 {
			r.Cost = costOf(r.Direct, r.Stream)
		}
		err = errors.Join(err, r.write(*out))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "knative:", err)
		os.Exit(1)
	}
}

// logf prints a line of progress, with the time.
func logf(format string, args ...any) {
	fmt.Printf("%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// measure runs the steps of the package's doc.
func (r *results) measure(ctx context.Context, idle time.Duration) error {
	return steps(ctx, ensureNamespaces, directWiring.delivers, r.timeWakeUps("direct wiring", &r.FromZero, &r.Warm),
		kubectl("-n", classicNS, "rollout", "status", "deployment/"+classicNS, "--timeout=3m"),
		populate(r.N, batch{oursFoo, nsOurs}, batch{classicFoo, nsClassic}),
		func(ctx context.Context) (err error) {
			r.Direct, err = measureIdle(ctx, "one operator, direct wiring", idle, directGroups, fooPing)
			return
		},
		r.pair(directWiring, "direct", burstSpec{"classic", classicFoo, nsBurstClassic1, 0}, burstSpec{"ours, direct wiring", oursFoo, nsBurstDirect, 0}),
		r.scaledOut("autoscaled", 0, r.pair(directWiring, "autoscaled",
			burstSpec{fmt.Sprintf("ours, direct wiring, autoscaled to %d pods at most", scaleOutPods), oursFoo, nsBurstScaled, 0}, burstSpec{"classic", classicFoo, nsBurstClassic3, 0})),
		r.scaledOut("three-pods", scaleOutPods, r.pair(directWiring, "three-pods",
			burstSpec{"classic", classicFoo, nsBurstClassic4, scaleOutPods}, burstSpec{fmt.Sprintf("ours, direct wiring, %d pods kept", scaleOutPods), oursFoo, nsBurstForced, scaleOutPods})),
		switchToStream,
		r.timeWakeUps("shared stream", &r.StreamFromZero, &r.StreamWarm),
		populate(r.N, batch{bar, nsBars}),
		func(ctx context.Context) (err error) {
			r.Stream, err = measureIdle(ctx, "two operators, shared stream", idle, streamGroups, fooPing, barPing)
			return
		},
		r.pair(streamWiring, "stream", burstSpec{"ours, shared stream", oursFoo, nsBurstStream, 0}, burstSpec{"classic", classicFoo, nsBurstClassic2, 0}),
		r.scaledOut("stream-autoscaled", 0, r.pair(streamWiring, "stream-autoscaled",
			burstSpec{fmt.Sprintf("ours, shared stream, autoscaled to %d pods at most", scaleOutPods), oursFoo, nsBurstStreamScaled, 0}, burstSpec{"classic", classicFoo, nsBurstClassic5, 0})))
}

// timeWakeUps times Foos created with the reconciler at zero, each followed
// by one created with its pod warm, in the wiring named wiring, into
// fromZero and warm.
func (r *results) timeWakeUps(wiring string, fromZero, warm *[]float64) func(context.Context) error {
	return func(ctx context.Context) error {
		tag := strconv.FormatInt(time.Now().Unix(), 36) // a run started again finds the last one's Foos
		for i := range r.WakeUps {
			if err := atZero(ctx, false, fooReconciler); err != nil {
				return err
			}
			cold, err := createAndTime(ctx, nsWake, fmt.Sprintf("cold-%s-%02d", tag, i), 5*time.Minute)
			if err != nil {
				return err
			}
			w, err := createAndTime(ctx, nsWake, fmt.Sprintf("warm-%s-%02d", tag, i), 5*time.Minute)
			if err != nil {
				return err
			}
			logf("wake-up %d, %s: from zero %v, warm %v", i+1, wiring, cold.Round(time.Millisecond), w.Round(time.Millisecond))
			*fromZero, *warm = append(*fromZero, cold.Seconds()), append(*warm, w.Seconds())
		}
		return nil
	}
}

// scaledOut runs the step with the Foo reconciler scaled out, if the run
// makes the pair named name: on least to scaleOutPods pods as Knative's
// autoscaler decides, the keys shared through Leases (config/scale-out,
// BUCKETS); then back to zero to one pod, as config/ has it.
func (r *results) scaledOut(name string, least int, step func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if r.Burst == 0 || !slices.Contains(r.Pairs, name) {
			return nil
		}
		return errors.Join(steps(ctx, scaleReconciler(least, scaleOutPods), step), scaleReconciler(0, 1)(ctx))
	}
}

// pair makes the burst pair named name, if the run makes it, its sides in
// the order given.
func (r *results) pair(w wiring, name string, sides ...burstSpec) func(context.Context) error {
	return func(ctx context.Context) error {
		for i := 0; i < len(sides) && r.Burst > 0 && slices.Contains(r.Pairs, name); i++ {
			res, err := runBurst(ctx, w, sides[i], name, i+1, r.Burst, r.UntilReconciled)
			if err != nil {
				return err
			}
			r.Bursts = append(r.Bursts, res)
		}
		return nil
	}
}
