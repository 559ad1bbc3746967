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
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// write prints results.md and writes it, with results.json, into out (if
// given).
func write(r *results, out string) error {
	var b strings.Builder
	for _, section := range []func(*strings.Builder, *results){header, wakeUps, idleBill, perOperator, namespaceCost, bursts, burstsCPU, auditBreakdown} {
		section(&b, r)
	}
	fmt.Print(b.String())
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("making %s: %w", out, err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("results.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, "results.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing results.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, "results.md"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing results.md: %w", err)
	}
	return nil
}

// header is the title, the flags and what the run found.
func header(b *strings.Builder, r *results) {
	fmt.Fprintf(b, "# On real Knative: the one-node cluster (hack/cluster), %s\n\n", r.Started.Format(time.RFC3339))
	fmt.Fprintf(b, "`hack/bench-knative.sh -wakeups %d -n %d -idle %v -burst %d -pairs %s`. The classic is k8s.io/sample-controller v0.35.4 "+
		"as a pod, its client raised to the reconciler's limit (200 requests/s, burst 400). Foos ask for 0 replicas.\n\n",
		r.WakeUps, r.N, time.Duration(r.IdleSeconds*float64(time.Second)), r.Burst, strings.Join(r.Pairs, ","))
	for _, n := range r.Notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
}

// wakeUps is the wake-ups' table.
func wakeUps(b *strings.Builder, r *results) {
	if len(r.FromZero) == 0 {
		return
	}
	b.WriteString("## Wake-ups (direct wiring)\n\n| create to Deployment | this operator | classic |\n|---|---|---|\n")
	fmt.Fprintf(b, "| from zero (%d tries) | p50 %s, p99 %s | always on: no wake-up |\n", len(r.FromZero), seconds(pct(r.FromZero, 0.5)), seconds(pct(r.FromZero, 0.99)))
	fmt.Fprintf(b, "| pod warm (%d tries) | p50 %s, p99 %s | |\n\n", len(r.Warm), seconds(pct(r.Warm, 0.5)), seconds(pct(r.Warm, 0.99)))
}

// idleBill is the table of both phases' rows, and how to read it.
func idleBill(b *strings.Builder, r *results) {
	b.WriteString("## The idle bill\n\n")
	for i, ph := range []phase{r.Direct, r.Stream} {
		if len(ph.Rows) == 0 {
			why := "the run stopped before"
			if r.IdleSeconds == 0 {
				why = "-idle 0"
			}
			fmt.Fprintf(b, "- Phase %d: not measured (%s).\n", i+1, why)
			continue
		}
		fmt.Fprintf(b, "- Phase %d, %s: %v from %s; the cluster held %d of our Foos, %d classic Foos and %d Bars (N=%d of each in the bench's idle namespaces, the rest made by the wake-ups, canaries and bursts before).\n",
			i+1, ph.Name, time.Duration(ph.WindowSeconds*float64(time.Second)).Round(time.Second), ph.Start.Format("15:04:05Z"),
			ph.Objects[oursFoo], ph.Objects[classicFoo], ph.Objects[bar], r.N)
	}
	b.WriteString("\n| row | phase | always-on pods | pod-seconds per hour | peak working set MiB | working set MiB, time-weighted | mean CPU millicores | requests CPU m / memory MiB |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, name := range rowOrder {
		for i, ph := range []phase{r.Direct, r.Stream} {
			if f, ok := ph.row(name); ok {
				fmt.Fprintf(b, "| %s | %d | %s | %.0f | %.1f | %.1f | %.1f | %s |\n", name, i+1, alwaysOnCell(f), f.PodSecondsPerHour,
					f.PeakWorkingSetMiB, f.MeanWorkingSetMiB, f.CPUMillicores, requestsCell(f))
			}
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "- Pods listed every second, each counted from its creation until it is gone (terminating included); "+
		"pod-seconds per hour = pod-seconds × 3600 / window. Working set and CPU from the kubelet's /stats/summary every %v "+
		"(the working set summed over the row's pods, its peak and its mean over the window, 0 while no pod exists); "+
		"CPU is what the pods used over the window, per second.\n", statsEvery)
	fmt.Fprintf(b, "- The hourly resync ping (minute 0) fell in phase 1's window: %s; in phase 2's: %s. A window without it misses "+
		"the hour's ping wake-up of each reconciler; a window with it counts that wake-up 3600 / window times per hour. "+
		"So each phase then fires the resync pings once on purpose (their schedule set to the next minute, then put back), "+
		"and measures each wake-up as above, from the pod's creation until it is gone:\n", yesNo(r.Direct.PingInWindow), yesNo(r.Stream.PingInWindow))
	for i, ph := range []phase{r.Direct, r.Stream} {
		for _, w := range ph.PingWakes {
			fmt.Fprintf(b, "  - phase %d, %s: a pod for %.1f s, %.1f s of it terminating (queue-proxy's drain), peak working set %.1f MiB: "+
				"%.2f %% of an hour, the idle pod-time of the hourly default with nothing else happening.\n",
				i+1, w.Service, w.PodSeconds, w.TerminatingSeconds, w.PeakWorkingSetMiB, w.HourlyPercent)
		}
	}
	b.WriteString("- Requests: the sum of the containers' requests in the pod specs, time-weighted; for a Knative Service that " +
		"scales to zero, its latest revision's Deployment's pod template (queue-proxy included) × the share of the window a pod " +
		"existed. Knative's own requests are lowered on this cluster to 10m and 20Mi a container " +
		"(hack/tools/knative/lowerrequests): upstream's are higher.\n")
	fmt.Fprintf(b, "- The broker's data plane (pods of knative-eventing named %s) is installed with Eventing here and "+
		"always on; direct wiring does not use it (phase 1), the stream does, for every operator (phase 2). Knative "+
		"Eventing's row holds the PingSource adapter, which sends every operator's resync ping.\n", strings.Join(brokerPlane, ", "))
	b.WriteString("- Not pods, so not in the table: hack/cluster/up.sh runs " + hostLine(r.Stream.HostProcesses) + " as host processes.\n\n")
}

// alwaysOnCell is the always-on pods of a row: those of a Service that
// scales to zero are none.
func alwaysOnCell(f footprint) string {
	if f.AlwaysOn {
		return strconv.Itoa(f.MaxPods)
	}
	return fmt.Sprintf("0; %d seen", len(f.Pods))
}

// requestsCell is a row's requests; a Service's that scales to zero shows
// its template's and the share of the window.
func requestsCell(f footprint) string {
	cell := fmt.Sprintf("%.1f / %.1f", f.RequestsCPUMillicores, f.RequestsMemoryMiB)
	if !f.AlwaysOn {
		cell += fmt.Sprintf(" (template %.0f / %.0f × %.1f %%)", f.TemplateCPUMillicores, f.TemplateMemoryMiB, 100*f.PodFraction)
	}
	return cell
}

// hostLine names the host processes with their resident memory.
func hostLine(hs []hostProcess) string {
	var parts []string
	for _, h := range hs {
		mem := fmt.Sprintf("%.1f MiB resident at the end of phase 2", h.RSSMiB)
		if h.Error != "" {
			mem = "its memory not read: " + h.Error
		}
		parts = append(parts, fmt.Sprintf("%s (%s; %s)", h.Name, h.Role, mem))
	}
	if len(parts) == 0 {
		return "Traefik and CoreDNS"
	}
	return strings.Join(parts, ", and ")
}

// perOperator is what one more operator costs, what all share, and the
// break-even lines.
func perOperator(b *strings.Builder, r *results) {
	c := r.Cost
	b.WriteString("## What one more operator costs, and the break-even\n\n")
	if len(r.Direct.Rows) == 0 || len(r.Stream.Rows) == 0 {
		b.WriteString("Not worked out: it needs both phases' idle bills.\n\n")
		return
	}
	b.WriteString("Each figure time-weighted over its phase's idle window (a reconciler's while a pod of it exists, times the share of the window it did).\n\n")
	b.WriteString("| | always-on pods | working set MiB | CPU millicores | requests CPU m / memory MiB |\n|---|---:|---:|---:|---|\n")
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
		fmt.Fprintf(b, "| %s | %d | %.1f | %.1f | %.1f / %.1f |\n", row.name, row.s.AlwaysOnPods, row.s.WorkingSetMiB, row.s.CPUMillicores,
			row.s.RequestsCPUMillicores, row.s.RequestsMemoryMiB)
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "- Break-even on the stream: K classic controllers hold as much memory as Knative, the stream and K of ours at "+
		"K = ⌈shared / (classic − ours)⌉ = ⌈%.1f / (%.1f − %.1f)⌉: **%s** (working set); by memory requests, ⌈%.1f / (%.1f − %.1f)⌉: **%s**.\n",
		c.SharedStream.WorkingSetMiB, c.Classic.WorkingSetMiB, c.OursStream.WorkingSetMiB, never(c.BreakEvenStream.WorkingSet),
		c.SharedStream.RequestsMemoryMiB, c.Classic.RequestsMemoryMiB, c.OursStream.RequestsMemoryMiB, never(c.BreakEvenStream.RequestsMemory))
	fmt.Fprintf(b, "- Break-even in direct wiring (an adapter per operator): ⌈%.1f / (%.1f − %.1f)⌉: **%s** (working set); by memory requests, "+
		"⌈%.1f / (%.1f − %.1f)⌉: **%s**.\n",
		c.SharedDirect.WorkingSetMiB, c.Classic.WorkingSetMiB, c.OursDirect.WorkingSetMiB, never(c.BreakEvenDirect.WorkingSet),
		c.SharedDirect.RequestsMemoryMiB, c.Classic.RequestsMemoryMiB, c.OursDirect.RequestsMemoryMiB, never(c.BreakEvenDirect.RequestsMemory))
	if c.TraefikRSSMiB > 0 {
		fmt.Fprintf(b, "- With Traefik, Knative Serving's ingress here (a host process, %.1f MiB resident), counted as shared: on the stream, **%s**.\n",
			c.TraefikRSSMiB, never(c.BreakEvenStreamTraefik))
	}
	b.WriteString("\n")
}

// never is a break-even K, or "never".
func never(k int) string {
	if k == 0 {
		return "never"
	}
	return strconv.Itoa(k)
}

// namespaceCost is what one namespace made, then deleted, cost on the
// stream.
func namespaceCost(b *strings.Builder, r *results) {
	c := r.NamespaceChurn
	if c == nil {
		return
	}
	b.WriteString("## A namespace made, then deleted (shared stream)\n\n")
	b.WriteString("Eventing writes the namespace list into the stream's adapter's environment: each namespace made or deleted " +
		"rolls the adapter, whose new pod, once ready, asks every member for a resync. Measured once each, the members at zero; " +
		"adapter: from the request until its Deployment rolled out with the change; wake-ups counted as the pings' (a pod from " +
		"its creation until it is gone).\n\n")
	b.WriteString("| step | adapter rolled out | wake-ups |\n|---|---:|---|\n")
	for _, s := range []struct {
		name string
		step churnStep
	}{{"made", c.Made}, {"deleted", c.Deleted}} {
		var wakes []string
		for _, w := range s.step.Wakes {
			wakes = append(wakes, fmt.Sprintf("%s: a pod for %.1f s (%.1f s terminating)", w.Service, w.PodSeconds, w.TerminatingSeconds))
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", s.name, seconds(s.step.AdapterSeconds), strings.Join(wakes, "; "))
	}
	b.WriteString("\n")
}

// bursts is the bursts' table.
func bursts(b *strings.Builder, r *results) {
	if len(r.Bursts) == 0 {
		return
	}
	fmt.Fprintf(b, "## Bursts of %d Foos\n\n", r.Burst)
	b.WriteString("Each in a fresh namespace, made at the start of the run; before each, every Deployment of the bench's " +
		"namespaces observed (no backlog in the deployment controller), the adapter delivering (a canary Foo) and our " +
		"reconciler at zero, its pods gone. Seconds from the first create; first reconcile: ours, status.observedGeneration " +
		"of the Foo's generation; the classic's, its Deployment made and a status; observed: the Deployment's " +
		"status.observedGeneration of its generation. The classic's Foos are deleted once timed (and their Deployments " +
		"and ReplicaSets gone before the next burst): it resyncs every Foo every 30 s and writes its status, which would " +
		"load every later burst.\n\n")
	b.WriteString("| burst | order in its pair | all created | first reconcile of every Foo | every Deployment observed | every Foo Ready |\n|---|---|---:|---:|---:|---:|\n")
	rows := slices.Clone(r.Bursts)
	slices.SortStableFunc(rows, func(x, y burstResult) int { return strings.Compare(x.Side, y.Side) })
	for _, res := range rows {
		ready := "—" // the classic's Foos have no Ready condition
		if !strings.HasPrefix(res.Side, "classic") {
			ready = seconds(res.ReadyAllSeconds)
		}
		fmt.Fprintf(b, "| %s (%s) | %s of 2, %s pair | %s | %s | %s | %s |\n", res.Side, res.Namespace, ordinal(res.Order), res.Pair,
			seconds(res.CreatedSeconds), seconds(res.FirstReconcileAllSeconds), seconds(res.DeploymentsObservedAllSeconds), ready)
	}
	b.WriteString("\n")
}

// burstsCPU is the node's CPU during each burst, by component.
func burstsCPU(b *strings.Builder, r *results) {
	var rows []burstResult
	for _, res := range r.Bursts {
		if res.CPU != nil {
			rows = append(rows, res)
		}
	}
	if len(rows) == 0 {
		return
	}
	slices.SortStableFunc(rows, func(x, y burstResult) int { return strings.Compare(x.Side, y.Side) })
	b.WriteString("## The node's CPU during the bursts\n\n")
	fmt.Fprintf(b, "CPU-seconds of every process of the node (the whole cluster: control plane, Knative, the operators, the bench itself), "+
		"from the burst's first create to the first reconcile of every Foo, read from /proc; a pod's by its namespace and owner, "+
		"a host process's by its program. Components of at least %.0f %% of a burst's total are listed; cores busy: CPU-seconds "+
		"over the window, of the node's %d.\n\n", 100*cpuShown, rows[0].CPU.NodeCores)
	var names []string
	for _, res := range rows {
		for _, c := range res.CPU.Components {
			if c.Seconds >= cpuShown*res.CPU.Seconds && !slices.Contains(names, c.Name) {
				names = append(names, c.Name)
			}
		}
	}
	b.WriteString("| component |")
	for _, res := range rows {
		fmt.Fprintf(b, " %s (%s) |", res.Side, res.Namespace)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(rows)) + "\n")
	row := func(name string, cell func(c *burstCPU) string) {
		fmt.Fprintf(b, "| %s |", name)
		for _, res := range rows {
			fmt.Fprintf(b, " %s |", cell(res.CPU))
		}
		b.WriteString("\n")
	}
	for _, name := range names {
		row(name, func(c *burstCPU) string { return fmt.Sprintf("%.1f", c.of(name)) })
	}
	row("the rest", func(c *burstCPU) string {
		rest := c.Seconds
		for _, name := range names {
			rest -= c.of(name)
		}
		return fmt.Sprintf("%.1f", max(rest, 0))
	})
	row("**all**", func(c *burstCPU) string { return fmt.Sprintf("**%.1f**", c.Seconds) })
	row("window (s)", func(c *burstCPU) string { return fmt.Sprintf("%.1f", c.WindowSeconds) })
	row("cores busy", func(c *burstCPU) string { return fmt.Sprintf("%.2f", c.Cores) })
	b.WriteString("\n")
}

// cpuShown is the least share of a burst's CPU a component needs to be
// listed on its own.
const cpuShown = 0.02

// auditBreakdown is our bursts' audit tables.
func auditBreakdown(b *strings.Builder, r *results) {
	first := true
	for _, res := range r.Bursts {
		if res.Audit == nil {
			continue
		}
		if first {
			b.WriteString("## Our reconciler's requests during its bursts (audit log)\n\n")
			fmt.Fprintf(b, "Requests of %s, by second from the burst's first create (when the API server received them), "+
				"by verb and resource, until the reconciler's pod was gone.\n\n", reconcilerUser)
			first = false
		}
		fmt.Fprintf(b, "### %s (%d requests)\n\n%s\n", res.Side, res.Audit.Requests, res.Audit.markdown())
	}
}

// pct is the p-th percentile of the values, by nearest rank: of 10, p50 is
// the 5th and p99 the 10th.
func pct(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	return s[max(int(math.Ceil(p*float64(len(s))))-1, 0)]
}

// seconds formats a time in seconds; 0 is a milestone not reached.
func seconds(s float64) string {
	if s == 0 {
		return "not reached"
	}
	if s < 10 {
		return fmt.Sprintf("%.2f s", s)
	}
	return fmt.Sprintf("%.1f s", s)
}

// yesNo says a bool in words.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// ordinal is 1st or 2nd, a side's place in its pair.
func ordinal(n int) string {
	if n == 1 {
		return "1st"
	}
	return "2nd"
}
