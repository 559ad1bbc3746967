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
	"strings"
	"testing"
	"time"
)

// results.md keeps the tables and rows the docs cite, with the ratios to
// the raised classic worked out.
func TestWriteMarkdown(t *testing.T) {
	rep := &Report{When: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), Ns: []int{1000}, Burst: 1000, Idle: "30s", Cores: 2, SenderAuth: true,
		Results: []Result{
			{Controller: ClassicRaised, N: 1000, Burst: 1000, SteadyRSSMiB: 86, BurstSeconds: 9.3, UpdateSeconds: 8, WritesPerFoo: 9, Requests: map[string]float64{"PUT foos/status": 9}},
			{Controller: Ours, N: 1000, Burst: 1000, SteadyRSSMiB: 43, BurstSeconds: 18.6, UpdateSeconds: 12, WritesPerFoo: 3,
				Resync: map[string]float64{"LIST foos": 3, "LIST deployments": 3}, ResyncMs: 403, BurstCPU: map[string]float64{"kube-apiserver": 13.2}},
			{Controller: Adapters, N: 1000, SteadyRSSMiB: 100, AnonRSSMiB: 25, PeakRSSMiB: 120},
			{Controller: OursQueued, N: 1000, Burst: 1000, BurstSeconds: 4.65, UpdateSeconds: 4},
		}}
	var b bytes.Buffer
	rep.WriteMarkdown(&b)
	for _, want := range []string{
		"| N | controller | RSS steady MiB (anon) | RSS peak MiB | start→ready ms | start→first Foo ms | burst s (Foos) | update burst s |",
		"| 1000 | " + ClassicRaised + " | 86 (0) |", "| 1000 | " + Ours + " | 43 (0) |", "| 1000 | " + Adapters + " (shared, separate) | 100 (25) | 120 |",
		"| 1000 | 0.50× | 2.00× | 0.50× | 1.50× | 0.50× | 0.33× |",
		"- N=1000, " + ClassicRaised + ": PUT foos/status 9.00",
		"- N=1000: 6 requests (LIST deployments 3, LIST foos 3), 0 writes, answered in 403 ms",
		"- N=1000, " + Ours + " (18.6 s, 37.2 CPU s): kube-apiserver 13.2",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("results.md has no %q:\n%s", want, b.String())
		}
	}
}
