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
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The break-even is the smallest K with shared + K × ours <= K × classic.
func TestOperators(t *testing.T) {
	for _, tc := range []struct {
		shared, classic, ours float64
		want                  int
	}{{599, 43.1, 0.6, 15}, {100, 30, 10, 5}, {0, 43.1, 0.6, 1}, {100, 40, 40, 0}, {100, 40, 41, 0}} {
		if got := operators(tc.shared, tc.classic, tc.ours); got != tc.want {
			t.Errorf("operators(%v, %v, %v) = %d, want %d", tc.shared, tc.classic, tc.ours, got, tc.want)
		}
	}
}

// costOf counts always-on pods, sums each wiring's shared rows, adds the
// hourly ping's wake-up to a reconciler whose window held none of its pods
// (and only then), and works out the break-evens.
func TestCostOf(t *testing.T) {
	on := func(row string, pods int, ws float64) footprint {
		return footprint{Row: row, AlwaysOn: true, MaxPods: pods, MeanWorkingSetMiB: ws}
	}
	knative := []footprint{on(rowServing, 4, 250), on(rowEventing, 5, 225)}
	fooWake := pingWake{Service: fooReconciler.String(), PodSeconds: 36, PeakWorkingSetMiB: 40}
	direct := phase{Rows: append([]footprint{on(rowClassic, 1, 43), {Row: rowFoo, PodSeconds: 8, MeanWorkingSetMiB: 0.4},
		on(rowFooAdapter, 1, 11)}, knative...), PingWakes: []pingWake{fooWake}}
	stream := phase{Rows: append([]footprint{{Row: rowFoo}, {Row: rowBar}, on(rowStreamAdapter, 1, 13), on(rowBrokerPlane, 3, 108)}, knative...),
		PingWakes: []pingWake{fooWake, {Service: barReconciler.String(), PodSeconds: 72, PeakWorkingSetMiB: 30}}}
	c := costOf(direct, stream)
	got := []float64{float64(c.Classic.AlwaysOnPods), float64(c.OursDirect.AlwaysOnPods), float64(c.OursStream.AlwaysOnPods),
		float64(c.SharedDirect.AlwaysOnPods), float64(c.SharedStream.AlwaysOnPods),
		c.OursDirect.WorkingSetMiB, c.OursStream.WorkingSetMiB, c.BarStream.WorkingSetMiB, c.SharedDirect.WorkingSetMiB, c.SharedStream.WorkingSetMiB,
		float64(c.BreakEvenDirect), float64(c.BreakEvenStream)}
	want := []float64{1, 1, 0, 9, 13,
		0.4 + 11, 40 * 36.0 / 3600, 30 * 72.0 / 3600, // the direct window held a pod: no ping added
		250 + 225, 13 + 108 + 250 + 225,
		16, 14}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("pods; working sets; shared; break-evens (-want, +got):\n%s", diff)
	}
}
