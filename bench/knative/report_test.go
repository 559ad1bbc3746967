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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// results.md keeps the sections, columns and rows the docs cite; the audit
// table has our reconciler's requests by the second they were received in,
// the most frequent first, the seconds with none collapsed, each totalled.
func TestWrite(t *testing.T) {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	var requests []controlplane.AuditEvent
	for _, q := range []string{
		`"verb":"get","objectRef":{"resource":"foos"},"requestReceivedTimestamp":"2026-12-03T10:00:00.100000Z"`,
		`"verb":"update","objectRef":{"resource":"foos","subresource":"status"},"requestReceivedTimestamp":"2026-12-03T10:00:00.900000Z"`,
		`"verb":"update","objectRef":{"resource":"foos","subresource":"status"},"requestReceivedTimestamp":"2026-12-03T10:00:01.500000Z"`,
		`"verb":"update","objectRef":{"resource":"foos","subresource":"status"},"requestReceivedTimestamp":"2026-12-03T10:00:05.200000Z"`,
	} {
		var e controlplane.AuditEvent
		if err := json.Unmarshal([]byte("{"+q+"}"), &e); err != nil {
			t.Fatal(err)
		}
		requests = append(requests, e)
	}
	row := func(name string) footprint {
		return footprint{Row: name, AlwaysOn: true, MaxPods: 1, MeanWorkingSetMiB: 42.5}
	}
	r := &results{
		Started: start, WakeUps: 1, N: 10, IdleSeconds: 60, Burst: 10, Pairs: pairNames, pairsGiven: true,
		FromZero: []float64{0.77}, Warm: []float64{0.73},
		Direct: phase{Name: "one operator, direct wiring", Rows: []footprint{row(rowClassic), {Row: rowFoo}, row(rowFooAdapter), row(rowServing), row(rowEventing)}},
		Stream: phase{Name: "two operators, shared stream", Rows: []footprint{row(rowClassic), {Row: rowFoo}, {Row: rowBar}, row(rowStreamAdapter),
			row(rowBrokerPlane), row(rowServing), row(rowEventing)}},
		NamespaceChurn: &namespaceChurn{Made: churnStep{AdapterSeconds: 4}, Deleted: churnStep{AdapterSeconds: 8.3}},
		Bursts: []burstResult{
			{Side: "ours, shared stream", Pair: "stream", Order: 1, Namespace: nsBurstStream, FirstReconcileAllSeconds: 26.8, Audit: breakdown(requests, start),
				CPU: &burstCPU{WindowSeconds: 26.8, Seconds: 53.1, Cores: 1.98, NodeCores: 2, Components: map[string]float64{"knative-eventing/mt-broker-filter": 5}}},
			{Side: "classic", Pair: "stream", Order: 2, Namespace: nsBurstClassic2, FirstReconcileAllSeconds: 13.1},
		},
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
		"## A namespace made, then deleted (shared stream)", "| made | 4.00 s |", "| deleted | 8.30 s |",
		"## Bursts of 10 Foos", "| classic (burst-classic-2) | 2nd of 2, stream pair |", "| ours, shared stream (burst-ours-stream) | 1st of 2, stream pair |",
		"## The node's CPU during the bursts", "| knative-eventing/mt-broker-filter | 5.0 |",
		"## Our reconciler's requests during its bursts (audit log)", "### ours, shared stream (4 requests)",
		"| s | update foos/status | get foos | all |", "| 0 | 1 | 1 | 2 |", "| … 3 s with no request … |", "| 5 | 1 |  | 1 |", "| all | 3 | 1 | 4 |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md has no %q:\n%s", want, md)
		}
	}
	if strings.Index(string(md), "| made |") > strings.Index(string(md), "| deleted |") {
		t.Errorf("the namespace deleted before it was made:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(out, "results.json")); err != nil {
		t.Errorf("no results.json: %v", err)
	}
}
