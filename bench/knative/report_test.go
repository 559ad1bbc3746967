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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// results.md keeps the sections and rows the docs cite: the docs look
// their figures up in these files.
func TestWriteKeepsTheSectionsTheDocsCite(t *testing.T) {
	row := func(name string) footprint {
		return footprint{Row: name, AlwaysOn: true, MaxPods: 1, MeanWorkingSetMiB: 42.5}
	}
	direct := phase{Name: "one operator, direct wiring", Rows: []footprint{row(rowClassic), {Row: rowFoo}, row(rowFooAdapter), row(rowServing), row(rowEventing)}}
	stream := phase{Name: "two operators, shared stream", Rows: []footprint{row(rowClassic), {Row: rowFoo}, {Row: rowBar}, row(rowStreamAdapter), row(rowBrokerPlane), row(rowServing), row(rowEventing)}}
	r := &results{
		Started: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), WakeUps: 1, N: 10, IdleSeconds: 60, Burst: 10, Pairs: pairNames,
		FromZero: []float64{0.77}, Warm: []float64{0.73}, Direct: direct, Stream: stream,
		NamespaceChurn: &namespaceChurn{Made: churnStep{AdapterSeconds: 4}, Deleted: churnStep{AdapterSeconds: 8.3}},
		Bursts: []burstResult{{
			Side: "ours, shared stream", Pair: "stream", Order: 1, Namespace: nsBurstStream, FirstReconcileAllSeconds: 26.8,
			CPU:   &burstCPU{WindowSeconds: 26.8, Seconds: 53.1, Cores: 1.98, NodeCores: 2, Components: []cpuComponent{{"knative-eventing/mt-broker-filter", 5}}},
			Audit: &auditTable{Requests: 1, Columns: []string{"get foos"}, Rows: []auditRow{{Second: 0, Counts: []int{1}}}},
		}},
	}
	r.Cost = costOf(r.Direct, r.Stream)
	out := t.TempDir()
	if err := write(r, out); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"`hack/bench-knative.sh -wakeups 1 -n 10 -idle 1m0s -burst 10 -pairs direct,stream`",
		"## Wake-ups (direct wiring)", "| from zero (1 tries) | p50 0.77 s, p99 0.77 s |",
		"## The idle bill", "| classic controller, as a pod | 1 | 1 |", "| the stream's adapter (shared) | 2 | 1 |",
		"## What one more operator costs, and the break-even", "| classic, per operator (phase 1) | 1 | 42.5 |", "- Break-even on the stream:",
		"## A namespace made, then deleted (shared stream)", "| made | 4.00 s |",
		"## Bursts of 10 Foos", "| ours, shared stream (burst-ours-stream) | 1st of 2, stream pair |",
		"## The node's CPU during the bursts", "| knative-eventing/mt-broker-filter | 5.0 |",
		"## Our reconciler's requests during its bursts (audit log)", "### ours, shared stream (1 requests)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md has no %q:\n%s", want, md)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		t.Errorf("no results.json: %v", err)
	}
}
