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
	"testing"
)

// The break-even is the smallest K with shared + K × ours <= K × classic.
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
		if got := operators(tc.shared, tc.classic, tc.ours); got != tc.want {
			t.Errorf("%s: operators(%v, %v, %v) = %d, want %d", tc.name, tc.shared, tc.classic, tc.ours, got, tc.want)
		}
	}
}

// costOf counts always-on pods, sums each wiring's shared rows, adds the
// hourly ping's wake-up to a reconciler whose window held none of its pods
// (and only then), and works out the break-evens, Traefik's too.
func TestCostOf(t *testing.T) {
	always := func(row string, pods int, ws, req float64) footprint {
		return footprint{Row: row, AlwaysOn: true, MaxPods: pods, MeanWorkingSetMiB: ws, RequestsMemoryMiB: req}
	}
	knative := []footprint{always(rowServing, 4, 250, 80), always(rowEventing, 5, 225, 100)}
	direct := phase{
		Rows: append([]footprint{always(rowClassic, 1, 43, 64), {Row: rowFoo, MeanWorkingSetMiB: 0.4, PodSecondsPerHour: 45},
			always(rowFooAdapter, 1, 11, 16)}, knative...),
		PingWakes: []pingWake{{Service: fooReconciler.String(), PodSeconds: 36, PeakWorkingSetMiB: 40, RequestsMemoryMiB: 50}},
	}
	stream := phase{
		Rows: append([]footprint{{Row: rowFoo}, {Row: rowBar}, always(rowStreamAdapter, 1, 13, 16), always(rowBrokerPlane, 3, 108, 60)}, knative...),
		PingWakes: []pingWake{
			{Service: fooReconciler.String(), PodSeconds: 36, PeakWorkingSetMiB: 40, RequestsMemoryMiB: 50},
			{Service: barReconciler.String(), PodSeconds: 72, PeakWorkingSetMiB: 30, RequestsMemoryMiB: 50},
		},
		HostRSSMiB: map[string]float64{"traefik": 86},
	}
	c := costOf(direct, stream)
	for _, f := range []struct {
		what      string
		got, want float64
	}{
		{"classic's always-on pods", float64(c.Classic.AlwaysOnPods), 1},
		{"ours direct, always-on pods (its adapter)", float64(c.OursDirect.AlwaysOnPods), 1},
		{"ours on the stream, always-on pods", float64(c.OursStream.AlwaysOnPods), 0},
		{"shared by the stream, always-on pods", float64(c.SharedStream.AlwaysOnPods), 13},
		{"shared in direct wiring, always-on pods", float64(c.SharedDirect.AlwaysOnPods), 9},
		{"ours direct, working set (its window held a pod: no ping)", c.OursDirect.WorkingSetMiB, 0.4 + 11},
		{"ours on the stream, working set (the ping's pod)", c.OursStream.WorkingSetMiB, 40 * 36.0 / 3600},
		{"ours on the stream, memory requests", c.OursStream.RequestsMemoryMiB, 50 * 36.0 / 3600},
		{"Bar on the stream, working set", c.BarStream.WorkingSetMiB, 30 * 72.0 / 3600},
		{"shared by the stream, working set", c.SharedStream.WorkingSetMiB, 13 + 108 + 250 + 225},
		{"shared in direct wiring, working set", c.SharedDirect.WorkingSetMiB, 250 + 225},
		{"stream break-even, working set", float64(c.BreakEvenStream.WorkingSet), 14},
		{"direct break-even, working set", float64(c.BreakEvenDirect.WorkingSet), 16},
		{"stream break-even, memory requests", float64(c.BreakEvenStream.RequestsMemory), float64(operators(256, 64, 0.5))},
		{"Traefik", c.TraefikRSSMiB, 86},
		{"stream break-even with Traefik", float64(c.BreakEvenStreamTraefik), float64(operators(596+86, 43, 0.4))},
	} {
		if math.Abs(f.got-f.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", f.what, f.got, f.want)
		}
	}
}
