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
	"strconv"
)

// share is what a part of the idle bill costs, each figure time-weighted
// over its phase's window; Of names the rows summed.
type share struct {
	Of            []string `json:"of"`
	AlwaysOnPods  int      `json:"alwaysOnPods"`
	WorkingSetMiB float64  `json:"workingSetMiB"`
	CPUMillicores float64  `json:"cpuMillicores"`
}

// pinged are the Services the resync pings wake, by row.
var pinged = map[string]string{rowFoo: fooReconciler.String(), rowBar: barReconciler.String()}

// shareOf sums the phase's rows and, for a reconciler that had no pod in
// the window (of minutes), its ping's wake-up once an hour.
func shareOf(ph phase, rows ...string) share {
	var s share
	for _, name := range rows {
		f, ok := ph.row(name)
		if !ok {
			continue
		}
		s.Of = append(s.Of, name)
		if f.AlwaysOn {
			s.AlwaysOnPods += f.MaxPods
		}
		s.WorkingSetMiB, s.CPUMillicores = s.WorkingSetMiB+f.MeanWorkingSetMiB, s.CPUMillicores+f.CPUMillicores
		for _, w := range ph.PingWakes {
			if f.PodSeconds == 0 && w.Service == pinged[name] {
				s.WorkingSetMiB += w.PeakWorkingSetMiB * w.PodSeconds / 3600
				s.Of = append(s.Of, "its hourly ping's wake-up")
			}
		}
	}
	return s
}

// cost is what one more operator costs, what all share in each wiring, and
// the break-evens: the number of operators from which ours, with what they
// share, hold no more memory (working set) than classic controllers; 0 for
// never.
type cost struct {
	Classic         share `json:"classic"`
	OursDirect      share `json:"oursDirect"`
	OursStream      share `json:"oursStream"`
	BarStream       share `json:"barStream"`
	SharedDirect    share `json:"sharedDirect"`
	SharedStream    share `json:"sharedStream"`
	BreakEvenDirect int   `json:"breakEvenDirect"`
	BreakEvenStream int   `json:"breakEvenStream"`
}

// costOf works out the cost from the two phases' idle bills.
func costOf(direct, stream phase) cost {
	c := cost{
		Classic: shareOf(direct, rowClassic), OursDirect: shareOf(direct, rowFoo, rowFooAdapter),
		OursStream: shareOf(stream, rowFoo), BarStream: shareOf(stream, rowBar), SharedDirect: shareOf(direct, rowServing, rowEventing),
		SharedStream: shareOf(stream, rowServing, rowEventing, rowBrokerPlane, rowStreamAdapter, rowStreamRouter, rowStreamKeeper, rowDeadLetters),
	}
	c.BreakEvenDirect = operators(c.SharedDirect.WorkingSetMiB, c.Classic.WorkingSetMiB, c.OursDirect.WorkingSetMiB)
	c.BreakEvenStream = operators(c.SharedStream.WorkingSetMiB, c.Classic.WorkingSetMiB, c.OursStream.WorkingSetMiB)
	return c
}

// operators is the smallest K with shared + K × ours <= K × classic, at
// least 1; 0 (never) if ours costs as much as a classic or more.
func operators(shared, classic, ours float64) int {
	if ours >= classic {
		return 0
	}
	return max(1, int(math.Ceil(shared/(classic-ours))))
}

// never is a break-even, or "never".
func never(k int) string {
	if k == 0 {
		return "never"
	}
	return strconv.Itoa(k)
}
