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
	Of                    []string `json:"of"`
	AlwaysOnPods          int      `json:"alwaysOnPods"`
	WorkingSetMiB         float64  `json:"workingSetMiB"`
	CPUMillicores         float64  `json:"cpuMillicores"`
	RequestsCPUMillicores float64  `json:"requestsCpuMillicores"`
	RequestsMemoryMiB     float64  `json:"requestsMemoryMiB"`
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
		s.RequestsCPUMillicores, s.RequestsMemoryMiB = s.RequestsCPUMillicores+f.RequestsCPUMillicores, s.RequestsMemoryMiB+f.RequestsMemoryMiB
		for _, w := range ph.PingWakes {
			if f.PodSeconds == 0 && w.Service == pinged[name] {
				s.WorkingSetMiB, s.RequestsMemoryMiB = s.WorkingSetMiB+w.PeakWorkingSetMiB*w.PodSeconds/3600, s.RequestsMemoryMiB+w.RequestsMemoryMiB*w.PodSeconds/3600
				s.Of = append(s.Of, "its hourly ping's wake-up")
			}
		}
	}
	return s
}

// cost is what one more operator costs, what all share in each wiring, and
// the break-evens (on the stream also with Traefik, a host process here).
type cost struct {
	Classic                share     `json:"classic"`
	OursDirect             share     `json:"oursDirect"`
	OursStream             share     `json:"oursStream"`
	BarStream              share     `json:"barStream"`
	SharedDirect           share     `json:"sharedDirect"`
	SharedStream           share     `json:"sharedStream"`
	BreakEvenDirect        breakEven `json:"breakEvenDirect"`
	BreakEvenStream        breakEven `json:"breakEvenStream"`
	TraefikRSSMiB          float64   `json:"traefikRssMiB,omitempty"`
	BreakEvenStreamTraefik int       `json:"breakEvenStreamWithTraefik,omitempty"`
}

// breakEven is the number of operators from which ours, with what they
// share, cost no more memory than classic controllers; 0 for never.
type breakEven struct {
	WorkingSet     int `json:"workingSet"`
	RequestsMemory int `json:"requestsMemory"`
}

// costOf works out the cost from the two phases' idle bills.
func costOf(direct, stream phase) cost {
	c := cost{
		Classic: shareOf(direct, rowClassic), OursDirect: shareOf(direct, rowFoo, rowFooAdapter),
		OursStream: shareOf(stream, rowFoo), BarStream: shareOf(stream, rowBar), SharedDirect: shareOf(direct, rowServing, rowEventing),
		SharedStream: shareOf(stream, rowServing, rowEventing, rowBrokerPlane, rowStreamAdapter, rowDeadLetters),
	}
	breakEvenOf := func(shared, ours share) breakEven {
		return breakEven{operators(shared.WorkingSetMiB, c.Classic.WorkingSetMiB, ours.WorkingSetMiB),
			operators(shared.RequestsMemoryMiB, c.Classic.RequestsMemoryMiB, ours.RequestsMemoryMiB)}
	}
	c.BreakEvenDirect, c.BreakEvenStream = breakEvenOf(c.SharedDirect, c.OursDirect), breakEvenOf(c.SharedStream, c.OursStream)
	if rss, ok := stream.HostRSSMiB["traefik"]; ok {
		c.TraefikRSSMiB = rss
		c.BreakEvenStreamTraefik = operators(c.SharedStream.WorkingSetMiB+rss, c.Classic.WorkingSetMiB, c.OursStream.WorkingSetMiB)
	}
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

// chart is what hack/tools/chart/bars draws into chart.png: panels of bars,
// "\n" breaking a bar's label.
type chart struct {
	Title  string       `json:"title"`
	Note   string       `json:"note"`
	Panels []chartPanel `json:"panels"`
}

type chartPanel struct {
	Title string     `json:"title"`
	Bars  []chartBar `json:"bars"`
}

type chartBar struct {
	Label string  `json:"label"`
	Value float64 `json:"value"`
}

// chartOf charts the idle bill's memory per operator and shared.
func chartOf(c cost) chart {
	panel := func(title string, of func(share) float64) chartPanel {
		return chartPanel{title, []chartBar{{"classic\nper operator", of(c.Classic)}, {"ours, direct\nper operator", of(c.OursDirect)},
			{"ours, stream\nper operator", of(c.OursStream)}, {"shared\ndirect", of(c.SharedDirect)}, {"shared\nstream", of(c.SharedStream)}}}
	}
	return chart{"Knative, idle: what one more operator costs, and what all share", "break-even (operators): stream " +
		never(c.BreakEvenStream.WorkingSet) + " by working set, " + never(c.BreakEvenStream.RequestsMemory) + " by memory requests; direct wiring " +
		never(c.BreakEvenDirect.WorkingSet) + " by working set, " + never(c.BreakEvenDirect.RequestsMemory) + " by memory requests",
		[]chartPanel{panel("working set, MiB (time-weighted)", func(s share) float64 { return s.WorkingSetMiB }),
			panel("memory requests, MiB (time-weighted)", func(s share) float64 { return s.RequestsMemoryMiB })}}
}
