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

import "math"

// share is what a part of the idle bill costs, each figure time-weighted
// over its phase's window (a reconciler's memory counts while a pod of it
// exists only).
type share struct {
	// Of names the rows summed.
	Of                    []string `json:"of"`
	AlwaysOnPods          int      `json:"alwaysOnPods"`
	WorkingSetMiB         float64  `json:"workingSetMiB"`
	CPUMillicores         float64  `json:"cpuMillicores"`
	RequestsCPUMillicores float64  `json:"requestsCpuMillicores"`
	RequestsMemoryMiB     float64  `json:"requestsMemoryMiB"`
}

// shareOf sums the phase's rows of those names.
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
		s.WorkingSetMiB += f.MeanWorkingSetMiB
		s.CPUMillicores += f.CPUMillicores
		s.RequestsCPUMillicores += f.RequestsCPUMillicores
		s.RequestsMemoryMiB += f.RequestsMemoryMiB
	}
	return s
}

// cost is what one more operator costs, what all of them share, and the
// number of operators from which ours cost less memory than the classics.
type cost struct {
	// Classic is phase 1's classic controller (N Foos).
	Classic share `json:"classic"`
	// OursDirect is phase 1's Foo reconciler and Foo's own adapter.
	OursDirect share `json:"oursDirect"`
	// OursStream is phase 2's Foo reconciler: on the stream an operator adds
	// no always-on pod.
	OursStream share `json:"oursStream"`
	// BarStream is phase 2's Bar reconciler, the second operator.
	BarStream share `json:"barStream"`
	// SharedDirect is what direct wiring needs, whatever the number of
	// operators: Knative Serving, and Eventing without the broker's data
	// plane (phase 1).
	SharedDirect share `json:"sharedDirect"`
	// SharedStream is what the stream needs: Knative Serving and Eventing,
	// the broker's data plane, the stream's adapter and dead letters
	// (phase 2).
	SharedStream    share     `json:"sharedStream"`
	BreakEvenDirect breakEven `json:"breakEvenDirect"`
	BreakEvenStream breakEven `json:"breakEvenStream"`
	// TraefikRSSMiB is Traefik's resident memory (a host process here,
	// Knative Serving's ingress), and BreakEvenStreamTraefik the stream's
	// working-set break-even with it counted as shared.
	TraefikRSSMiB          float64 `json:"traefikRssMiB,omitempty"`
	BreakEvenStreamTraefik int     `json:"breakEvenStreamWithTraefik,omitempty"`
}

// breakEven is the number of operators K from which K of ours, with what
// they share, cost no more memory than K classic controllers; 0 for never.
type breakEven struct {
	WorkingSet     int `json:"workingSet"`
	RequestsMemory int `json:"requestsMemory"`
}

// costOf works out the per-operator cost and the break-even from the two
// phases' idle bills.
func costOf(direct, stream phase) cost {
	c := cost{
		Classic:      shareOf(direct, rowClassic),
		OursDirect:   shareOf(direct, rowFoo, rowFooAdapter),
		OursStream:   shareOf(stream, rowFoo),
		BarStream:    shareOf(stream, rowBar),
		SharedDirect: shareOf(direct, rowServing, rowEventing),
		SharedStream: shareOf(stream, rowServing, rowEventing, rowBrokerPlane, rowStreamAdapter, rowDeadLetters),
	}
	// An idle window of minutes holds no hourly ping, or counts it as if
	// every window had one: the ping's wake-up, measured once, is added as
	// one an hour.
	addPing(&c.OursDirect, direct, rowFoo, fooReconciler)
	addPing(&c.OursStream, stream, rowFoo, fooReconciler)
	addPing(&c.BarStream, stream, rowBar, barReconciler)
	c.BreakEvenDirect = breakEvenOf(c.SharedDirect, c.Classic, c.OursDirect)
	c.BreakEvenStream = breakEvenOf(c.SharedStream, c.Classic, c.OursStream)
	for _, h := range stream.HostProcesses {
		if h.Name == "traefik" && h.Error == "" {
			c.TraefikRSSMiB = h.RSSMiB
			c.BreakEvenStreamTraefik = operators(c.SharedStream.WorkingSetMiB+h.RSSMiB, c.Classic.WorkingSetMiB, c.OursStream.WorkingSetMiB)
		}
	}
	return c
}

// addPing adds the Service's hourly ping wake-up to s, unless the phase's
// idle window already counted a pod of it (its row).
func addPing(s *share, ph phase, row string, svc knativeService) {
	if f, ok := ph.row(row); ok && f.PodSecondsPerHour > 0 {
		return
	}
	for _, w := range ph.PingWakes {
		if w.Service == svc.String() {
			ws, req := w.hourly()
			s.WorkingSetMiB += ws
			s.RequestsMemoryMiB += req
			s.Of = append(s.Of, "its hourly ping's wake-up")
		}
	}
}

// breakEvenOf is the break-even in working set and in memory requests.
func breakEvenOf(shared, classic, ours share) breakEven {
	return breakEven{
		WorkingSet:     operators(shared.WorkingSetMiB, classic.WorkingSetMiB, ours.WorkingSetMiB),
		RequestsMemory: operators(shared.RequestsMemoryMiB, classic.RequestsMemoryMiB, ours.RequestsMemoryMiB),
	}
}

// operators is the smallest K with shared + K × ours <= K × classic:
// ⌈shared / (classic − ours)⌉, at least 1; 0 (never) if ours per operator
// costs as much as a classic or more.
func operators(shared, classic, ours float64) int {
	if ours >= classic {
		return 0
	}
	return max(1, int(math.Ceil(shared/(classic-ours))))
}

// chart is what hack/tools/chart/bars draws into chart.png.
type chart struct {
	Title  string       `json:"title"`
	Note   string       `json:"note"`
	Panels []chartPanel `json:"panels"`
}

// chartPanel is a panel of bars.
type chartPanel struct {
	Title string     `json:"title"`
	Bars  []chartBar `json:"bars"`
}

// chartBar is a bar; "\n" breaks its label.
type chartBar struct {
	Label string  `json:"label"`
	Value float64 `json:"value"`
}

// chartOf charts the idle bill's memory by part: per operator, and shared.
func chartOf(c cost) chart {
	panel := func(title string, v func(share) float64) chartPanel {
		return chartPanel{Title: title, Bars: []chartBar{
			{"classic\nper operator", v(c.Classic)},
			{"ours, direct\nper operator", v(c.OursDirect)},
			{"ours, stream\nper operator", v(c.OursStream)},
			{"shared\ndirect", v(c.SharedDirect)},
			{"shared\nstream", v(c.SharedStream)},
		}}
	}
	return chart{
		Title: "Knative, idle: what one more operator costs, and what all share",
		Note: "break-even (operators): stream " + never(c.BreakEvenStream.WorkingSet) + " by working set, " + never(c.BreakEvenStream.RequestsMemory) +
			" by memory requests; direct wiring " + never(c.BreakEvenDirect.WorkingSet) + " by working set, " + never(c.BreakEvenDirect.RequestsMemory) + " by memory requests",
		Panels: []chartPanel{
			panel("working set, MiB (time-weighted)", func(s share) float64 { return s.WorkingSetMiB }),
			panel("memory requests, MiB (time-weighted)", func(s share) float64 { return s.RequestsMemoryMiB }),
		},
	}
}
