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

package harness

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// WriteMarkdown writes results.md, a section a function.
func (rep *Report) WriteMarkdown(w io.Writer) {
	for _, section := range []func(io.Writer){rep.mainTable, rep.ratios, rep.requests, rep.resyncs, rep.incomplete} {
		section(w)
	}
}

// mainTable is every controller's figures at every N.
func (rep *Report) mainTable(w io.Writer) {
	auth := "off"
	if rep.SenderAuth {
		auth = "on: the adapters send their OIDC identities' tokens, and the adds of new Foos stand in for reads"
	}
	fmt.Fprintf(w, "Measured %s on one loopback kube-apiserver + etcd (%s idle window, bursts of %d Foos unless said; our sender authentication %s).\n\n",
		rep.When.UTC().Format("2006-01-02 15:04 MST"), rep.Idle, rep.Burst, auth)
	fmt.Fprint(w, "| N | controller | RSS steady MiB (anon) | RSS peak MiB | start→ready ms | start→first Foo ms | burst s (Foos) | update burst s | p50 / p99 ms | writes/Foo | reads/Foo | idle CPU s |\n",
		"|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		if r.Controller == Adapters {
			fmt.Fprintf(w, "| %d | %s (shared, separate) | %.0f (%.0f) | %.0f | | | | | | | | %.2f |\n", r.N, r.Controller, r.SteadyRSSMiB, r.AnonRSSMiB, r.PeakRSSMiB, r.IdleCPUSeconds)
			continue
		}
		burst := fmt.Sprintf("%.1f (%d)", r.BurstSeconds, r.Burst)
		if r.Incomplete != "" {
			burst += " incomplete"
		}
		fmt.Fprintf(w, "| %d | %s | %.0f (%.0f) | %.0f | %.0f | %.0f | %s | %.1f | %.0f / %.0f | %.2f | %.2f | %.2f |\n",
			r.N, r.Controller, r.SteadyRSSMiB, r.AnonRSSMiB, r.PeakRSSMiB, r.ReadyMs, r.FirstFooMs, burst, r.UpdateSeconds, r.P50Ms, r.P99Ms, r.WritesPerFoo, r.ReadsPerFoo, r.IdleCPUSeconds)
	}
	fmt.Fprintln(w)
}

// ratios is ours in both ack modes against the classic at every N.
func (rep *Report) ratios(w io.Writer) {
	fmt.Fprint(w, "Ratios, this project against the raised-QPS classic:\n\n",
		"| N | RSS steady | burst time (ack after reconcile) | burst time (ack on enqueue) | update burst (ack after reconcile) | update burst (ack on enqueue) | requests per Foo |\n",
		"|---|---|---|---|---|---|---|\n")
	for _, n := range rep.Ns {
		ours, queued, classic := rep.find(Ours, n), rep.find(OursQueued, n), rep.find(ClassicRaised, n)
		if ours.N != 0 && classic.N != 0 {
			fmt.Fprintf(w, "| %d | %.2f× | %.2f× | %.2f× | %.2f× | %.2f× | %.2f× |\n", n, ratio(ours.SteadyRSSMiB, classic.SteadyRSSMiB),
				ratio(ours.BurstSeconds, classic.BurstSeconds), ratio(queued.BurstSeconds, classic.BurstSeconds),
				ratio(ours.UpdateSeconds, classic.UpdateSeconds), ratio(queued.UpdateSeconds, classic.UpdateSeconds),
				ratio(ours.WritesPerFoo+ours.ReadsPerFoo, classic.WritesPerFoo+classic.ReadsPerFoo))
		}
	}
	fmt.Fprintln(w)
}

// requests is each controller's requests per Foo of the burst.
func (rep *Report) requests(w io.Writer) {
	fmt.Fprint(w, "Requests per Foo of the burst, by verb and resource (apiserver_request_total deltas, the harness's own creates taken out):\n\n")
	for _, n := range rep.Ns {
		for _, name := range []string{ClassicRaised, Ours, OursQueued} {
			if r := rep.find(name, n); len(r.Requests) > 0 {
				fmt.Fprintf(w, "- N=%d, %s: %s\n", n, name, joined(r.Requests, "%.2f"))
			}
		}
	}
	fmt.Fprintln(w)
}

// resyncs is what the ping's resync cost at every N.
func (rep *Report) resyncs(w io.Writer) {
	fmt.Fprint(w, "The ping's resync with every Foo converged (requests by verb and resource, time to its answer):\n\n")
	for _, n := range rep.Ns {
		r, total, writes := rep.find(Ours, n), 0.0, 0.0
		for k, v := range r.Resync {
			total += v
			if isWrite(k) {
				writes += v
			}
		}
		if r.Resync != nil {
			fmt.Fprintf(w, "- N=%d: %.0f requests (%s), %.0f writes, answered in %.0f ms\n", n, total, joined(r.Resync, "%.0f"), writes, r.ResyncMs)
		}
	}
	fmt.Fprintln(w)
}

// incomplete says what did not finish.
func (rep *Report) incomplete(w io.Writer) {
	for _, r := range rep.Results {
		if r.Incomplete != "" {
			fmt.Fprintf(w, "- N=%d, %s: %s\n", r.N, r.Controller, r.Incomplete)
		}
	}
}

// joined is "key value" of every entry of m, in key order.
func joined(m map[string]float64, format string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s "+format, k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// find is the result of a controller at an N, or a zero Result.
func (rep *Report) find(controller string, n int) Result {
	for _, r := range rep.Results {
		if r.Controller == controller && r.N == n {
			return r
		}
	}
	return Result{}
}

// ratio is a/b, or 0 when b is.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
