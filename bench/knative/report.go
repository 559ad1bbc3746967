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
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// markdown is results.md.
func (r *results) markdown() string {
	var b strings.Builder
	for _, section := range []func(*strings.Builder, *results){header, wakeUps, idleBill, perOperator, bursts, burstsCPU, auditTables} {
		section(&b, r)
	}
	return b.String()
}

// write prints results.md and writes it, with results.json, into out (if
// given).
func (r *results) write(out string) error {
	md := r.markdown()
	if fmt.Print(md); out == "" {
		return nil
	}
	js, err := json.MarshalIndent(r, "", "  ")
	return errors.Join(err, os.MkdirAll(out, 0o755), os.WriteFile(filepath.Join(out, "results.json"), append(js, '\n'), 0o644),
		os.WriteFile(filepath.Join(out, "results.md"), []byte(md), 0o644))
}

// header is the title, the command and the run's notes.
func header(b *strings.Builder, r *results) {
	until := map[bool]string{true: " -until-reconciled"}[r.UntilReconciled]
	fmt.Fprintf(b, "# On real Knative: the one-node cluster (hack/cluster), %s\n\n`hack/bench-knative.sh -wakeups %d -n %d -idle %v -burst %d%s -pairs %s`. "+
		"The classic is k8s.io/sample-controller v0.35.4 as a pod, its client raised to the reconciler's limit (200 requests/s, burst 400). "+
		"Foos ask for 0 replicas.\n\n", r.Started.Format(time.RFC3339), r.WakeUps, r.N, time.Duration(r.IdleSeconds*1e9), r.Burst, until, strings.Join(r.Pairs, ","))
	for _, n := range r.Notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
}

// wakeUps is the wake-ups' table.
func wakeUps(b *strings.Builder, r *results) {
	if len(r.StreamFromZero) > 0 {
		row := func(what string, direct, stream []float64, classic string) {
			fmt.Fprintf(b, "| %s (%d and %d tries) | p50 %s, p99 %s | p50 %s, p99 %s | %s |\n", what, len(direct), len(stream),
				seconds(pct(direct, 0.5)), seconds(pct(direct, 0.99)), seconds(pct(stream, 0.5)), seconds(pct(stream, 0.99)), classic)
		}
		b.WriteString("## Wake-ups\n\n| create to Deployment | this operator, direct wiring | this operator, shared stream | classic |\n|---|---|---|---|\n")
		row("from zero", r.FromZero, r.StreamFromZero, "always on: no wake-up")
		row("pod warm", r.Warm, r.StreamWarm, "")
		fmt.Fprintf(b, "\nFrom zero, the stream's p50 is %.2f× direct wiring's.\n\n", pct(r.StreamFromZero, 0.5)/pct(r.FromZero, 0.5))
		return
	}
	if len(r.FromZero) > 0 {
		fmt.Fprintf(b, "## Wake-ups (direct wiring)\n\n| create to Deployment | this operator | classic |\n|---|---|---|\n"+
			"| from zero (%d tries) | p50 %s, p99 %s | always on: no wake-up |\n| pod warm (%d tries) | p50 %s, p99 %s | |\n\n",
			len(r.FromZero), seconds(pct(r.FromZero, 0.5)), seconds(pct(r.FromZero, 0.99)), len(r.Warm), seconds(pct(r.Warm, 0.5)), seconds(pct(r.Warm, 0.99)))
	}
}

// idleBill is both phases' rows, and how they were measured.
func idleBill(b *strings.Builder, r *results) {
	b.WriteString("## The idle bill\n\n")
	if r.IdleSeconds == 0 {
		b.WriteString("Not measured (-idle 0).\n\n")
		return
	}
	phases := []phase{r.Direct, r.Stream}
	for i, ph := range phases {
		switch {
		case len(ph.Rows) > 0:
			fmt.Fprintf(b, "- Phase %d, %s: %v from %s; the cluster held %d of our Foos, %d classic Foos and %d Bars (N=%d of each in the bench's "+
				"idle namespaces, the rest made by the wake-ups, canaries and bursts before).\n", i+1, ph.Name,
				time.Duration(ph.WindowSeconds*1e9).Round(time.Second), ph.Start.Format("15:04:05Z"), ph.Objects[oursFoo], ph.Objects[classicFoo], ph.Objects[bar], r.N)
		case r.IdleSeconds == 0:
			fmt.Fprintf(b, "- Phase %d: not measured (-idle 0).\n", i+1)
		default:
			fmt.Fprintf(b, "- Phase %d: not measured (the run stopped before).\n", i+1)
		}
	}
	b.WriteString("\n| row | phase | always-on pods | pod-seconds per hour | peak working set MiB | working set MiB, time-weighted | mean CPU millicores |\n" +
		"|---|---|---:|---:|---:|---:|---:|\n")
	for _, name := range rowOrder {
		for i, ph := range phases {
			if f, ok := ph.row(name); ok {
				pods := strconv.Itoa(f.MaxPods)
				if !f.AlwaysOn {
					pods = fmt.Sprintf("0; %d seen", len(f.Pods))
				}
				fmt.Fprintf(b, "| %s | %d | %s | %.0f | %.1f | %.1f | %.1f |\n", name, i+1, pods, f.PodSecondsPerHour,
					f.PeakWorkingSetMiB, f.MeanWorkingSetMiB, f.CPUMillicores)
			}
		}
	}
	fmt.Fprintf(b, "\n- Pods listed every second, each counted from its creation until it is gone; the kubelet's working set (summed over "+
		"the row's pods, 0 while none exists) and CPU read every 5 s. The broker's data plane (pods named %s) is always on; direct "+
		"wiring does not use it. Knative Eventing's row holds the PingSource adapter, which sends the resync pings.\n", strings.Join(brokerPlane, ", "))
	fmt.Fprintf(b, "- The hourly resync ping fell in phase 1's window: %s; in phase 2's: %s. So each phase then fires the pings once, "+
		"and times each wake-up as above:\n", yesNo(r.Direct.PingInWindow), yesNo(r.Stream.PingInWindow))
	for i, ph := range phases {
		for _, w := range ph.PingWakes {
			fmt.Fprintf(b, "  - phase %d, %s: a pod for %.1f s, %.1f s of it terminating (queue-proxy's drain), peak working set %.1f MiB: "+
				"%.2f %% of an hour.\n", i+1, w.Service, w.PodSeconds, w.TerminatingSeconds, w.PeakWorkingSetMiB, w.HourlyPercent)
		}
	}
	b.WriteString("\n")
}

// perOperator is what one more operator costs, what all share, and the
// break-even.
func perOperator(b *strings.Builder, r *results) {
	c := r.Cost
	b.WriteString("## What one more operator costs, and the break-even\n\n")
	if len(r.Direct.Rows) == 0 || len(r.Stream.Rows) == 0 {
		b.WriteString("Not worked out: it needs both phases' idle bills.\n\n")
		return
	}
	b.WriteString("Each figure time-weighted over its phase's idle window (a reconciler's while a pod of it exists).\n\n" +
		"| | always-on pods | working set MiB | CPU millicores |\n|---|---:|---:|---:|\n")
	for _, row := range []struct {
		name string
		s    share
	}{
		{"classic, per operator (phase 1)", c.Classic},
		{"ours in direct wiring, per operator: its reconciler and its own adapter (phase 1)", c.OursDirect},
		{"ours on the stream, per operator: its reconciler (phase 2, the Foo reconciler)", c.OursStream},
		{"the second operator on the stream, for comparison: the Bar reconciler (phase 2)", c.BarStream},
		{"shared, direct wiring: Knative Serving and Eventing without the broker's data plane (phase 1)", c.SharedDirect},
		{"shared, stream: Knative Serving and Eventing, the broker's data plane, the stream's adapter, dead letters (phase 2)", c.SharedStream},
	} {
		fmt.Fprintf(b, "| %s | %d | %.1f | %.1f |\n", row.name, row.s.AlwaysOnPods, row.s.WorkingSetMiB, row.s.CPUMillicores)
	}
	b.WriteString("\n")
	for _, be := range []struct {
		what         string
		shared, ours share
		k            int
	}{
		{"on the stream", c.SharedStream, c.OursStream, c.BreakEvenStream},
		{"in direct wiring (an adapter per operator)", c.SharedDirect, c.OursDirect, c.BreakEvenDirect},
	} {
		fmt.Fprintf(b, "- Break-even %s: K classic controllers hold as much memory as Knative and K of ours at K = ⌈shared / (classic − ours)⌉ = "+
			"⌈%.1f / (%.1f − %.1f)⌉: **%s** (working set).\n", be.what, be.shared.WorkingSetMiB, c.Classic.WorkingSetMiB, be.ours.WorkingSetMiB, never(be.k))
	}
	b.WriteString("\n")
}

// sortedBursts are the bursts with their CPU if cpu, by side.
func sortedBursts(r *results, cpu bool) []burstResult {
	rows := slices.DeleteFunc(slices.Clone(r.Bursts), func(res burstResult) bool { return cpu && res.CPU == nil })
	slices.SortStableFunc(rows, func(x, y burstResult) int { return strings.Compare(x.Side, y.Side) })
	return rows
}

// bursts is the bursts' table.
func bursts(b *strings.Builder, r *results) {
	if len(r.Bursts) == 0 {
		return
	}
	podsHead, podsRule := "", "" // runs before the autoscaled pair counted no pods
	if slices.ContainsFunc(r.Bursts, func(res burstResult) bool { return res.MostPods > 0 }) {
		podsHead, podsRule = " most reconciler pods at once |", "---:|"
	}
	fmt.Fprintf(b, "## Bursts of %d Foos\n\nEach in a fresh namespace, once every Deployment of the bench is observed, the adapter delivers "+
		"(a canary Foo) and our reconciler is at zero, its pods gone (with pods kept, that many ready). Seconds from the first create; first reconcile: ours, its status of "+
		"its generation; the classic's, its Deployment made and a status; observed: the Deployment's status of its generation. The "+
		"classic's Foos are deleted once timed: it resyncs every Foo every 30 s.%s\n\n| burst | order in its pair | all created | "+
		"first reconcile of every Foo | every Deployment observed | every Foo Ready |%s\n|---|---|---:|---:|---:|---:|%s\n", r.Burst, map[bool]string{true: " With -until-reconciled a burst ends at " +
		"the first reconcile of every Foo, and its Foos, ours too, their Deployments and ReplicaSets are deleted then."}[r.UntilReconciled], podsHead, podsRule)
	for _, res := range sortedBursts(r, false) {
		ready, pods := "—", " 1, always on |" // the classic's Foos have no Ready condition
		if !strings.HasPrefix(res.Side, "classic") {
			ready, pods = seconds(res.ReadyAllSeconds), fmt.Sprintf(" %d |", res.MostPods)
		}
		if podsHead == "" {
			pods = ""
		}
		fmt.Fprintf(b, "| %s (%s) | %s of 2, %s pair | %s | %s | %s | %s |%s\n", res.Side, res.Namespace, []string{"", "1st", "2nd"}[res.Order], res.Pair,
			seconds(res.CreatedSeconds), seconds(res.FirstReconcileAllSeconds), seconds(res.DeploymentsObservedAllSeconds), ready, pods)
	}
	b.WriteString("\n")
}

// burstsCPU is the node's CPU during each burst, by component: those of at
// least 2 % of a burst's total on their own.
func burstsCPU(b *strings.Builder, r *results) {
	rows := sortedBursts(r, true)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## The node's CPU during the bursts\n\nCPU-seconds of every process of the node (the whole cluster and the bench), "+
		"from the burst's first create to the first reconcile of every Foo, read from /proc; a pod's by its namespace and owner, a host "+
		"process's by its program; components of at least 2 %% of a burst's total listed; cores busy of the node's %d; "+
		"the API server's requests per second over the same window, from its apiserver_request_total (runs since 2026-12-07).\n\n| component |", rows[0].CPU.NodeCores)
	var names []string
	for _, res := range rows {
		fmt.Fprintf(b, " %s (%s) |", res.Side, res.Namespace)
		for _, c := range res.CPU.Components {
			if c.Seconds >= 0.02*res.CPU.Seconds && !slices.Contains(names, c.Name) {
				names = append(names, c.Name)
			}
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(rows)) + "\n")
	row := func(name, format string, cell func(c *burstCPU) float64) {
		fmt.Fprintf(b, "| %s |", name)
		for _, res := range rows {
			fmt.Fprintf(b, " "+format+" |", cell(res.CPU))
		}
		b.WriteString("\n")
	}
	for _, name := range names {
		row(name, "%.1f", func(c *burstCPU) float64 { return c.of(name) })
	}
	row("the rest", "%.1f", func(c *burstCPU) float64 {
		rest := c.Seconds
		for _, name := range names {
			rest -= c.of(name)
		}
		return max(rest, 0)
	})
	row("**all**", "**%.1f**", func(c *burstCPU) float64 { return c.Seconds })
	row("window (s)", "%.1f", func(c *burstCPU) float64 { return c.WindowSeconds })
	row("cores busy", "%.2f", func(c *burstCPU) float64 { return c.Cores })
	if slices.ContainsFunc(rows, func(res burstResult) bool { return res.CPU.APIServerRequests > 0 }) { // runs before did not count them
		row("the API server's requests, every client's, per second", "%.0f", func(c *burstCPU) float64 { return c.APIServerRequests / c.WindowSeconds })
	}
	b.WriteString("\n")
}

// auditTables is our reconciler's requests during its bursts, by verb and
// resource, and the seconds they fell in.
func auditTables(b *strings.Builder, r *results) {
	audited := slices.DeleteFunc(slices.Clone(r.Bursts), func(res burstResult) bool { return res.Audit == nil || res.Audit.Requests == 0 })
	for i, res := range audited {
		if i == 0 {
			fmt.Fprintf(b, "## Our reconciler's requests during its bursts (audit log)\n\nRequests of %s from the burst's first create "+
				"until %s, by verb and resource; seconds from the first create, when the API server received the "+
				"first and the last (results.json has them by second).\n\n| burst | requests | per Foo | by verb and resource | seconds |\n"+
				"|---|---:|---:|---|---|\n", reconcilerUser, map[bool]string{true: "the first reconcile of every Foo",
				false: "the reconciler's pods were gone (with pods kept, until 5 s after its last request but its Leases')"}[r.UntilReconciled])
		}
		t, kinds := res.Audit, make([]string, len(res.Audit.Columns))
		for c, name := range t.Columns {
			n := 0
			for _, row := range t.Rows {
				n += row.Counts[c]
			}
			kinds[c] = fmt.Sprintf("%s %d", name, n)
		}
		fmt.Fprintf(b, "| %s | %d | %.2f | %s | %d to %d |\n", res.Side, t.Requests, float64(t.Requests)/float64(r.Burst), strings.Join(kinds, ", "),
			t.Rows[0].Second, t.Rows[len(t.Rows)-1].Second)
		if i == len(audited)-1 {
			b.WriteString("\n")
		}
	}
}

// pct is the p-th percentile of the values, by nearest rank: of 10, p50 is
// the 5th and p99 the 10th.
func pct(values []float64, p float64) float64 {
	s := slices.Sorted(slices.Values(values))
	return s[max(int(math.Ceil(p*float64(len(s))))-1, 0)]
}

// seconds formats a time in seconds; 0 is a milestone not reached.
func seconds(s float64) string {
	switch {
	case s == 0:
		return "not reached"
	case s < 10:
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}

func yesNo(b bool) string { return map[bool]string{true: "yes", false: "no"}[b] }
