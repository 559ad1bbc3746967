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
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The rows of the idle bill, in the order of results.md.
const (
	rowClassic       = "classic controller, as a pod"
	rowFoo           = "Foo reconciler"
	rowBar           = "Bar reconciler"
	rowFooAdapter    = "Foo's own adapter (direct)"
	rowStreamAdapter = "the stream's adapter (shared)"
	rowStreamRouter  = "the stream's router (shared)"
	rowStreamKeeper  = "the stream's keeper (shared)"
	rowDeadLetters   = "dead letters"
	rowBrokerPlane   = "broker data plane (shared)"
	rowServing       = "Knative Serving"
	rowEventing      = "Knative Eventing (excluding the broker data plane)"
)

var rowOrder = []string{rowClassic, rowFoo, rowBar, rowFooAdapter, rowStreamAdapter, rowStreamRouter, rowStreamKeeper, rowDeadLetters, rowBrokerPlane, rowServing, rowEventing}

// brokerPlane names the pods that carry a Broker's events (MTChannelBasedBroker).
var brokerPlane = []string{"mt-broker-ingress", "mt-broker-filter", "imc-dispatcher"}

// group is a row of the idle bill: the pods has selects, of service if any.
type group struct {
	row     string
	has     func(p *corev1.Pod) bool
	service knativeService
}

// labelled selects the pods of ns with the label.
func labelled(ns, key, value string) func(p *corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Namespace == ns && p.Labels[key] == value }
}

// serviceGroup is the row of a Service's pods.
func serviceGroup(row string, s knativeService) group {
	return group{row, labelled(s.ns, "serving.knative.dev/service", s.name), s}
}

func brokerPod(p *corev1.Pod) bool {
	return p.Namespace == "knative-eventing" && slices.ContainsFunc(brokerPlane, func(s string) bool { return strings.HasPrefix(p.Name, s) })
}

var (
	operatorGroups = []group{{row: rowClassic, has: labelled(classicNS, "app", classicNS)}, serviceGroup(rowFoo, fooReconciler)}
	knativeGroups  = []group{{row: rowBrokerPlane, has: brokerPod}, {row: rowServing, has: func(p *corev1.Pod) bool { return p.Namespace == "knative-serving" }},
		{row: rowEventing, has: func(p *corev1.Pod) bool { return p.Namespace == "knative-eventing" && !brokerPod(p) }}}
	// directGroups are phase 1's: the broker's data plane is installed with
	// Eventing, but direct wiring does not use it.
	directGroups = slices.Concat(operatorGroups, []group{{row: rowFooAdapter, has: labelled(fooSystem, adapterKey, adapterValue)}}, knativeGroups)
	streamGroups = slices.Concat(operatorGroups, []group{serviceGroup(rowBar, barReconciler),
		{row: rowStreamAdapter, has: labelled(streamNS, adapterKey, adapterValue)}, {row: rowStreamRouter, has: labelled(streamNS, "app.kubernetes.io/component", "router")},
		serviceGroup(rowStreamKeeper, streamKeeper), serviceGroup(rowDeadLetters, deadLetters)}, knativeGroups)
)

// phase is the idle bill of one phase, with the resync pings' wake-ups
// fired after it; PingInWindow: the hourly ping (minute 0) fell in it.
type phase struct {
	Name          string       `json:"name"`
	Start         time.Time    `json:"start"`
	WindowSeconds float64      `json:"windowSeconds"`
	PingInWindow  bool         `json:"pingInWindow"`
	Objects       map[kind]int `json:"objects"`
	Rows          []footprint  `json:"rows"`
	PingWakes     []pingWake   `json:"pingWakes"`
}

// row returns the phase's row of that name, and whether it has one.
func (ph phase) row(name string) (footprint, bool) {
	i := slices.IndexFunc(ph.Rows, func(f footprint) bool { return f.Row == name })
	if i < 0 {
		return footprint{}, false
	}
	return ph.Rows[i], true
}

// footprint is what a group's pods held and used over a window, each pod
// from its creation until it is gone.
type footprint struct {
	Row               string   `json:"row"`
	AlwaysOn          bool     `json:"alwaysOn"`
	MaxPods           int      `json:"maxPods"`
	Pods              []string `json:"pods"`
	PodSeconds        float64  `json:"podSeconds"`
	PodSecondsPerHour float64  `json:"podSecondsPerHour"`
	PeakWorkingSetMiB float64  `json:"peakWorkingSetMiB"`
	MeanWorkingSetMiB float64  `json:"meanWorkingSetMiB"`
	CPUMillicores     float64  `json:"cpuMillicores"`
}

// tally adds up a group's samples; now is its pods in the last one.
type tally struct {
	group
	fp                footprint
	now               int
	terminating       float64
	cpuFirst, cpuLast map[string]uint64
	wsSum             float64
}

// add counts the group's pods of a sample, each from its creation or the
// last sample, the later; its CPU from its start if made after from.
func (t *tally) add(pods []corev1.Pod, now, last, from time.Time, st map[string]podStats) {
	ws := 0.0
	t.now = 0
	for _, p := range pods {
		if !t.has(&p) {
			continue
		}
		if t.now++; !slices.Contains(t.fp.Pods, p.Name) {
			t.fp.Pods = append(t.fp.Pods, p.Name)
		}
		held := now.Sub(last).Seconds()
		if c := p.CreationTimestamp.Time; c.After(last) {
			held = now.Sub(c).Seconds()
		}
		if t.fp.PodSeconds += held; p.DeletionTimestamp != nil {
			t.terminating += held
		}
		if s, ok := st[p.Namespace+"/"+p.Name]; ok {
			if _, ok := t.cpuFirst[p.Name]; !ok && p.CreationTimestamp.Time.Before(from) {
				t.cpuFirst[p.Name] = s.cpu
			}
			t.cpuLast[p.Name], ws = s.cpu, ws+float64(s.workingSet)/(1<<20)
		}
	}
	if t.fp.MaxPods = max(t.fp.MaxPods, t.now); st != nil {
		t.fp.PeakWorkingSetMiB, t.wsSum = max(t.fp.PeakWorkingSetMiB, ws), t.wsSum+ws
	}
}

// footprint is the tally's over a window, with readings of the kubelet.
func (t *tally) footprint(window float64, readings int) footprint {
	fp := t.fp
	fp.Row, fp.AlwaysOn = t.row, t.service.name == ""
	fp.PodSecondsPerHour, fp.MeanWorkingSetMiB = fp.PodSeconds*3600/window, t.wsSum/float64(max(readings, 1))
	for name, last := range t.cpuLast {
		first := t.cpuFirst[name]
		if last < first {
			first = 0 // restarted: from zero again
		}
		fp.CPUMillicores += float64(last-first) / window / 1e6
	}
	return fp
}

// sample tallies the groups' pods every interval from from, reading the
// kubelet every statsEvery-th time, until done holds.
func sample(ctx context.Context, groups []group, from time.Time, every time.Duration, statsEvery int,
	done func(now time.Time, ts []*tally) bool) ([]*tally, int, time.Time, error) {
	var ts []*tally
	for _, g := range groups {
		ts = append(ts, &tally{group: g, cpuFirst: map[string]uint64{}, cpuLast: map[string]uint64{}})
	}
	for i, readings, last := 0, 0, from; ; i++ {
		now := time.Now()
		pods, err := podsOf(ctx, "", "")
		var st map[string]podStats
		if err == nil && i%statsEvery == 0 {
			if st, err = stats(ctx); err == nil {
				readings++
			} else {
				logf("  a reading of the kubelet skipped: %v", err)
				st, err = nil, nil
			}
		}
		if err != nil {
			logf("  a sample skipped: %v", err) // its seconds go to the next one
		} else {
			for _, t := range ts {
				t.add(pods, now, last, from, st)
			}
			if last = now; done(now, ts) {
				return ts, readings, last, nil
			}
		}
		select {
		case <-ctx.Done():
			return ts, readings, last, ctx.Err()
		case <-time.After(every):
		}
	}
}

// measureIdle bills the groups' pods over the window, the Services among
// them gone first, then fires the pings once and times their wake-ups.
func measureIdle(ctx context.Context, name string, window time.Duration, groups []group, pings ...resyncPing) (ph phase, err error) {
	if ph.Name = name; window == 0 {
		return ph, nil
	}
	for _, g := range groups {
		if g.service.name != "" {
			if err := atZero(ctx, true, g.service); err != nil {
				return ph, err
			}
		}
	}
	logf("%s: idle for %v", name, window)
	ph.Objects = map[kind]int{}
	for _, k := range []kind{oursFoo, classicFoo, bar} {
		if l, err := dyn.Resource(k.gvr()).List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err == nil {
			ph.Objects[k] = len(l.Items)
		}
	}
	ph.Start = time.Now().UTC()
	ts, readings, last, err := sample(ctx, groups, ph.Start, time.Second, 5, func(now time.Time, _ []*tally) bool { return now.Sub(ph.Start) >= window })
	if err != nil {
		return ph, err
	}
	ph.WindowSeconds = last.Sub(ph.Start).Seconds()
	hour := ph.Start.Truncate(time.Hour)
	ph.PingInWindow = hour.Equal(ph.Start) || !hour.Add(time.Hour).After(last)
	for _, t := range ts {
		ph.Rows = append(ph.Rows, t.footprint(ph.WindowSeconds, readings))
	}
	ph.PingWakes, err = firePings(ctx, pings...)
	return ph, err
}

// podStats is a pod's CPU core-nanoseconds and working set bytes.
type podStats struct{ cpu, workingSet uint64 }

// stats reads the kubelet's figures of every pod, by "namespace/name".
func stats(ctx context.Context) (map[string]podStats, error) {
	b, err := kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/onenode/proxy/stats/summary").DoRaw(ctx)
	var s struct {
		Pods []struct {
			PodRef struct{ Name, Namespace string }
			CPU    struct{ UsageCoreNanoSeconds uint64 }
			Memory struct{ WorkingSetBytes uint64 }
		}
	}
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	out := map[string]podStats{}
	for _, p := range s.Pods {
		out[p.PodRef.Namespace+"/"+p.PodRef.Name] = podStats{p.CPU.UsageCoreNanoSeconds, p.Memory.WorkingSetBytes}
	}
	return out, err
}

// resyncPing is an operator's resync PingSource and the Service it wakes.
type resyncPing struct {
	name    string
	service knativeService
}

var fooPing, barPing = resyncPing{"foo-resync", fooReconciler}, resyncPing{"bar-resync", barReconciler}

// pingWake is a Service's wake-up, its pods counted as the idle bill's.
type pingWake struct {
	Service            string    `json:"service"`
	Fired              time.Time `json:"fired"`
	PodSeconds         float64   `json:"podSeconds"`
	HourlyPercent      float64   `json:"hourlyPercent"`
	PeakWorkingSetMiB  float64   `json:"peakWorkingSetMiB"`
	TerminatingSeconds float64   `json:"terminatingSeconds"`
}

// firePings makes each PingSource fire once, at the next whole minute at
// least 20 s away, and times the wake-ups, the Services gone first.
func firePings(ctx context.Context, pings ...resyncPing) ([]pingWake, error) {
	at := time.Now().Add(20 * time.Second).Truncate(time.Minute).Add(time.Minute).UTC()
	var services []knativeService
	for _, p := range pings {
		sources := dyn.Resource(schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1", Resource: "pingsources"}).Namespace(p.service.ns)
		schedule := func(ctx context.Context, s string) error {
			_, err := sources.Patch(ctx, p.name, types.MergePatchType, fmt.Appendf(nil, `{"spec":{"schedule":%q}}`, s), metav1.PatchOptions{})
			return err
		}
		u, err := sources.Get(ctx, p.name, metav1.GetOptions{})
		if err == nil {
			err = atZero(ctx, true, p.service)
		}
		if err == nil {
			err = schedule(ctx, fmt.Sprintf("%d %d * * *", at.Minute(), at.Hour()))
		}
		if err != nil {
			return nil, err
		}
		was, _, _ := unstructured.NestedString(u.Object, "spec", "schedule")
		defer func() {
			if err := schedule(context.Background(), was); err != nil {
				logf("  %s's schedule not put back to %q: %v", p.name, was, err)
			}
		}()
		services = append(services, p.service)
	}
	logf("the resync pings fire at %s", at.Format("15:04:05"))
	return wakesOf(ctx, at, services...)
}

// wakesOf samples the Services' pods every 250 ms from from, the kubelet
// every 2 s, until each has had a pod and has none left.
func wakesOf(ctx context.Context, from time.Time, services ...knativeService) ([]pingWake, error) {
	var groups []group
	for _, s := range services {
		groups = append(groups, serviceGroup(s.String(), s))
	}
	ctx, cancel := context.WithDeadline(ctx, from.Add(5*time.Minute))
	defer cancel()
	ts, _, _, err := sample(ctx, groups, from, 250*time.Millisecond, 8, func(_ time.Time, ts []*tally) bool {
		return !slices.ContainsFunc(ts, func(t *tally) bool { return t.fp.MaxPods == 0 || t.now > 0 })
	})
	var wakes []pingWake
	for _, t := range ts {
		w := pingWake{t.row, from, t.fp.PodSeconds, 100 * t.fp.PodSeconds / 3600, t.fp.PeakWorkingSetMiB, t.terminating}
		logf("  %s: a pod for %.1f s (%.1f s terminating), peak working set %.1f MiB", w.Service, w.PodSeconds, w.TerminatingSeconds, w.PeakWorkingSetMiB)
		wakes = append(wakes, w)
	}
	return wakes, err
}
