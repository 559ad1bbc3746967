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
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// The break-even is the smallest number of operators K with
// shared + K × ours <= K × classic.
func TestOperators(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		shared, classic, ours float64
		want                  int
	}{
		{"the stream's run of 06-52", 599, 43.1, 0.6, 15},
		{"exactly even at K", 100, 30, 10, 5},
		{"nothing shared: from the first", 0, 43.1, 0.6, 1},
		{"ours costs as much: never", 100, 40, 40, 0},
		{"ours costs more: never", 100, 40, 41, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := operators(tc.shared, tc.classic, tc.ours)
			if got != tc.want {
				t.Fatalf("operators(%v, %v, %v) = %d, want %d", tc.shared, tc.classic, tc.ours, got, tc.want)
			}
			if got > 0 {
				k := float64(got)
				if tc.shared+k*tc.ours > k*tc.classic {
					t.Errorf("at %d operators ours cost %.1f, the classics %.1f: not even", got, tc.shared+k*tc.ours, k*tc.classic)
				}
			}
		})
	}
}

// costOf counts an always-on row's pods, sums the shared rows of each
// wiring, adds the hourly ping's wake-up to a reconciler whose window held
// none of its pods (and only then), and works out both break-evens.
func TestCostOf(t *testing.T) {
	direct := phase{
		Rows: []footprint{
			{Row: rowClassic, AlwaysOn: true, MaxPods: 1, MeanWorkingSetMiB: 43, RequestsMemoryMiB: 64},
			{Row: rowFoo, MeanWorkingSetMiB: 0.4, PodSecondsPerHour: 45}, // its window held a pod
			{Row: rowFooAdapter, AlwaysOn: true, MaxPods: 1, MeanWorkingSetMiB: 11, RequestsMemoryMiB: 16},
			{Row: rowServing, AlwaysOn: true, MaxPods: 4, MeanWorkingSetMiB: 250, RequestsMemoryMiB: 80},
			{Row: rowEventing, AlwaysOn: true, MaxPods: 5, MeanWorkingSetMiB: 225, RequestsMemoryMiB: 100},
		},
		PingWakes: []pingWake{{Service: fooReconciler.String(), PodSeconds: 36, PeakWorkingSetMiB: 40, RequestsMemoryMiB: 50}},
	}
	stream := phase{
		Rows: []footprint{
			{Row: rowFoo}, // at zero through the window
			{Row: rowBar},
			{Row: rowStreamAdapter, AlwaysOn: true, MaxPods: 1, MeanWorkingSetMiB: 13, RequestsMemoryMiB: 16},
			{Row: rowBrokerPlane, AlwaysOn: true, MaxPods: 3, MeanWorkingSetMiB: 108, RequestsMemoryMiB: 60},
			{Row: rowServing, AlwaysOn: true, MaxPods: 4, MeanWorkingSetMiB: 250, RequestsMemoryMiB: 80},
			{Row: rowEventing, AlwaysOn: true, MaxPods: 5, MeanWorkingSetMiB: 225, RequestsMemoryMiB: 100},
		},
		PingWakes: []pingWake{
			{Service: fooReconciler.String(), PodSeconds: 36, PeakWorkingSetMiB: 40, RequestsMemoryMiB: 50},
			{Service: barReconciler.String(), PodSeconds: 72, PeakWorkingSetMiB: 30, RequestsMemoryMiB: 50},
		},
		HostProcesses: []hostProcess{{Name: "traefik", RSSMiB: 86}},
	}
	c := costOf(direct, stream)

	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	if c.Classic.AlwaysOnPods != 1 || c.OursDirect.AlwaysOnPods != 1 || c.OursStream.AlwaysOnPods != 0 {
		t.Errorf("always-on pods: classic %d, ours direct %d, ours on the stream %d; want 1, 1 (its adapter), 0",
			c.Classic.AlwaysOnPods, c.OursDirect.AlwaysOnPods, c.OursStream.AlwaysOnPods)
	}
	if c.SharedStream.AlwaysOnPods != 13 || c.SharedDirect.AlwaysOnPods != 9 {
		t.Errorf("shared always-on pods: stream %d, direct %d; want 13, 9", c.SharedStream.AlwaysOnPods, c.SharedDirect.AlwaysOnPods)
	}
	// The direct window held a pod of the Foo reconciler: no ping added.
	near("ours direct, working set", c.OursDirect.WorkingSetMiB, 0.4+11)
	// On the stream none: the ping's pod, 36 s of an hour at 40 MiB.
	near("ours on the stream, working set", c.OursStream.WorkingSetMiB, 40*36.0/3600)
	near("ours on the stream, memory requests", c.OursStream.RequestsMemoryMiB, 50*36.0/3600)
	near("Bar on the stream, working set", c.BarStream.WorkingSetMiB, 30*72.0/3600)
	near("shared by the stream, working set", c.SharedStream.WorkingSetMiB, 13+108+250+225)
	near("shared in direct wiring, working set", c.SharedDirect.WorkingSetMiB, 250+225)

	if want := operators(596, 43, 0.4); c.BreakEvenStream.WorkingSet != want || want != 14 {
		t.Errorf("stream break-even by working set = %d, want %d (14)", c.BreakEvenStream.WorkingSet, want)
	}
	if want := operators(475, 43, 11.4); c.BreakEvenDirect.WorkingSet != want || want != 16 {
		t.Errorf("direct break-even by working set = %d, want %d (16)", c.BreakEvenDirect.WorkingSet, want)
	}
	if want := operators(256, 64, 50*36.0/3600); c.BreakEvenStream.RequestsMemory != want {
		t.Errorf("stream break-even by memory requests = %d, want %d", c.BreakEvenStream.RequestsMemory, want)
	}
	near("Traefik", c.TraefikRSSMiB, 86)
	if want := operators(596+86, 43, 0.4); c.BreakEvenStreamTraefik != want {
		t.Errorf("stream break-even with Traefik = %d, want %d", c.BreakEvenStreamTraefik, want)
	}
}

// breakdown bins the reconciler's requests by the second they were received
// in, its columns the most frequent first; the table collapses the seconds
// with none and totals each column.
func TestBreakdown(t *testing.T) {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	req := func(at time.Duration, verb, resource, sub string) controlplane.AuditEvent {
		var e controlplane.AuditEvent
		e.Verb = verb
		e.Received = metav1.NewMicroTime(start.Add(at))
		e.ObjectRef = &struct {
			APIGroup    string `json:"apiGroup"`
			Namespace   string `json:"namespace"`
			Name        string `json:"name"`
			Resource    string `json:"resource"`
			Subresource string `json:"subresource"`
		}{Resource: resource, Subresource: sub}
		return e
	}
	tab := breakdown([]controlplane.AuditEvent{
		req(100*time.Millisecond, "get", "foos", ""),
		req(900*time.Millisecond, "update", "foos", "status"),
		req(1500*time.Millisecond, "update", "foos", "status"),
		req(5200*time.Millisecond, "update", "foos", "status"),
	}, start)

	if tab.Requests != 4 {
		t.Errorf("%d requests, want 4", tab.Requests)
	}
	if want := []string{"update foos/status", "get foos"}; strings.Join(tab.Columns, ",") != strings.Join(want, ",") {
		t.Errorf("columns %q, want %q (the most frequent first)", tab.Columns, want)
	}
	var seconds []int
	for _, r := range tab.Rows {
		seconds = append(seconds, r.Second)
	}
	if len(seconds) != 3 || seconds[0] != 0 || seconds[1] != 1 || seconds[2] != 5 {
		t.Fatalf("seconds %v, want [0 1 5]", seconds)
	}
	if c := tab.Rows[0].Counts; c[0] != 1 || c[1] != 1 {
		t.Errorf("second 0: %v, want one status update and one get", c)
	}
	md := tab.markdown()
	for _, want := range []string{
		"| s | update foos/status | get foos | all |",
		"| 0 | 1 | 1 | 2 |",
		"| … 3 s with no request … |",
		"| 5 | 1 |  | 1 |",
		"| all | 3 | 1 | 4 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table has no line %q:\n%s", want, md)
		}
	}
	if got := (*auditTable)(nil).markdown(); !strings.Contains(got, "No request") {
		t.Errorf("no requests: %q, want it said", got)
	}
}
