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
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSmoke runs the whole harness small, on the tools hack/build-tools.sh
// builds: every controller must reconcile its bursts, every figure be there.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Ns: []int{20}, Burst: 20, RaisedQPS: 200, Idle: 2 * time.Second, Dir: t.TempDir(), Log: t.Logf, SenderAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ClassicRaised, Ours, OursQueued, Adapters} {
		if r := rep.find(name, 20); r.N == 0 || r.Incomplete != "" || r.SteadyRSSMiB <= 0 || r.PeakRSSMiB < r.SteadyRSSMiB {
			t.Fatalf("%s: %+v", name, r)
		}
	}
	for _, name := range []string{ClassicRaised, Ours, OursQueued} {
		r := rep.find(name, 20)
		if r.BurstSeconds <= 0 || r.UpdateSeconds <= 0 || r.ReadyMs <= 0 || r.FirstFooMs <= r.ReadyMs || r.P99Ms < r.P50Ms || r.P50Ms <= 0 ||
			r.Requests["POST deployments"] < 0.99 {
			t.Errorf("%s: implausible figures: %+v", name, r)
		}
	}
	ours := rep.find(Ours, 20)
	// Under sender authentication the adds of new Foos stand in for reads.
	if ours.Requests["GET foos"] != 0 {
		t.Errorf("ours: %v; want no GET of a Foo", ours.Requests)
	}
	// With every Foo converged, the resync lists one page of each and writes nothing.
	if diff := cmp.Diff(map[string]float64{"LIST foos": 1, "LIST deployments": 1}, ours.Resync); diff != "" || ours.ResyncMs <= 0 {
		t.Errorf("the ping's resync in %.0f ms (-want, +got):\n%s", ours.ResyncMs, diff)
	}
	var md bytes.Buffer
	rep.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "| 20 | "+Ours+" |") {
		t.Errorf("results.md lacks our row:\n%s", md.String())
	}
}

// results.md keeps the tables and rows the docs cite, with the ratios to
// the classic worked out and what did not finish marked.
func TestWriteMarkdown(t *testing.T) {
	rep := &Report{When: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), Ns: []int{1000}, Burst: 1000, Idle: "30s", SenderAuth: true,
		Results: []Result{
			{Controller: ClassicRaised, N: 1000, Burst: 1000, SteadyRSSMiB: 86, BurstSeconds: 9.3, UpdateSeconds: 8, WritesPerFoo: 9, Requests: map[string]float64{"PUT foos/status": 9}},
			{Controller: Ours, N: 1000, Burst: 1000, SteadyRSSMiB: 43, BurstSeconds: 18.6, UpdateSeconds: 12, WritesPerFoo: 3,
				Resync: map[string]float64{"LIST foos": 3, "LIST deployments": 3}, ResyncMs: 403},
			{Controller: Adapters, N: 1000, SteadyRSSMiB: 100, AnonRSSMiB: 25, PeakRSSMiB: 120},
			{Controller: OursQueued, N: 1000, Burst: 1000, BurstSeconds: 4.65, UpdateSeconds: 4, Incomplete: "update burst: 9 of 1000 Foos done"},
		}}
	var b bytes.Buffer
	rep.WriteMarkdown(&b)
	for _, want := range []string{
		"| N | controller | RSS steady MiB (anon) | RSS peak MiB | start→ready ms | start→first Foo ms | burst s (Foos) | update burst s |",
		"| 1000 | " + ClassicRaised + " | 86 (0) |", "| 1000 | " + Ours + " | 43 (0) |", "| 1000 | " + Adapters + " (shared, separate) | 100 (25) | 120 |",
		"| 1000 | " + OursQueued + " | 0 (0) | 0 | 0 | 0 | 4.7 (1000) incomplete | 4.0 |",
		"| N | RSS steady | burst time (ack after reconcile) | burst time (ack on enqueue) | update burst (ack after reconcile) | update burst (ack on enqueue) | requests per Foo |",
		"| 1000 | 0.50× | 2.00× | 0.50× | 1.50× | 0.50× | 0.33× |",
		"- N=1000, " + ClassicRaised + ": PUT foos/status 9.00",
		"- N=1000: 6 requests (LIST deployments 3, LIST foos 3), 0 writes, answered in 403 ms",
		"- N=1000, " + OursQueued + ": update burst: 9 of 1000 Foos done",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("results.md has no %q:\n%s", want, b.String())
		}
	}
}

// A burst's requests are the API server's by verb and resource, of every
// code, per Foo, and nothing else (not the server's own Lease renewals).
func TestRequestsPerFoo(t *testing.T) {
	metrics := `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 30
apiserver_request_total{code="409",component="apiserver",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",resource="foos",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 25
apiserver_request_total{code="200",component="apiserver",resource="foos",scope="namespace",subresource="",verb="LIST",version="v1alpha1"} 5
apiserver_request_total{code="200",component="apiserver",resource="foos",scope="namespace",subresource="",verb="WATCH",version="v1alpha1"} 7
apiserver_request_total{code="200",component="apiserver",resource="",scope="",subresource="",verb="GET",version=""} 7
apiserver_request_total{code="200",component="apiserver",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 3
apiserver_request_duration_seconds_count{resource="foos",subresource="",verb="GET"} 9
`
	res := Result{Burst: 10}
	res.perFoo(delta(map[string]float64{"LIST foos": 5}, parseRequests(metrics)))
	want := Result{Burst: 10, Requests: map[string]float64{"POST deployments": 4, "PUT foos/status": 2.5}, WritesPerFoo: 6.5}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("requests per Foo (-want, +got):\n%s", diff)
	}
}

// The /proc readings are of this process and this machine.
func TestProc(t *testing.T) {
	now, peak, anon, err := rss(os.Getpid())
	cpu, cpuErr := cpuSeconds(os.Getpid())
	if err != nil || cpuErr != nil || now <= 0 || peak < now || anon <= 0 || anon > now || cpu < 0 {
		t.Errorf("rss %.1f, peak %.1f, anon %.1f MiB (%v); CPU %.2f s (%v)", now, peak, anon, err, cpu, cpuErr)
	}
}

// The committed results hold what a reader opens, and nothing bulky.
func TestResultFoldersHoldOnlyResults(t *testing.T) {
	runs, _ := filepath.Glob(filepath.Join("..", "results", "*"))
	files, _ := filepath.Glob(filepath.Join("..", "results", "*", "*"))
	for _, f := range files {
		if !slices.Contains([]string{"results.md", "results.json", "chart.png"}, filepath.Base(f)) {
			t.Errorf("%s: a results folder holds results.md, results.json and chart.png only", f)
		}
	}
	for _, run := range runs {
		if _, err := os.Stat(filepath.Join(run, "results.md")); err != nil {
			t.Errorf("%s: want a run's folder, with its results.md: %v", run, err)
		}
	}
	if len(runs) == 0 {
		t.Error("no results in ../results")
	}
}
