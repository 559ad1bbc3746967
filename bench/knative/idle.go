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
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// The rows of the idle bill.
const (
	rowClassic       = "classic controller, as a pod"
	rowFoo           = "Foo reconciler"
	rowBar           = "Bar reconciler"
	rowFooAdapter    = "Foo's own adapter (direct)"
	rowStreamAdapter = "the stream's adapter (shared)"
	rowDeadLetters   = "dead letters"
	rowBrokerPlane   = "broker data plane (shared)"
	rowServing       = "Knative Serving"
	rowEventing      = "Knative Eventing (excluding the broker data plane)"
)

// rowOrder is the order of the rows in results.md.
var rowOrder = []string{rowClassic, rowFoo, rowBar, rowFooAdapter, rowStreamAdapter, rowDeadLetters, rowBrokerPlane, rowServing, rowEventing}

// brokerPlane are the name prefixes of the pods of knative-eventing that
// carry a Broker's events (MTChannelBasedBroker on InMemoryChannel): always
// on, shared by every operator on the stream.
var brokerPlane = []string{"mt-broker-ingress", "mt-broker-filter", "imc-dispatcher"}

// statsEvery is how often the kubelet's /stats/summary is read during an
// idle window (its figures are refreshed every 10-15 s); pods are listed
// every second.
const statsEvery = 5 * time.Second

// group is a row of the idle bill: the pods billed together.
type group struct {
	name string
	ns   string
	// selector selects the pods by label ("" for all of ns).
	selector string
	// prefixes, if any, keep the pods whose names start with one of them;
	// exclude leaves out those whose names start with one of its.
	prefixes, exclude []string
	// service is the Knative Service the pods are of, which scales to
	// zero; none for always-on pods.
	service knativeService
}

// alwaysOn tells whether the group's pods never scale to zero.
func (g group) alwaysOn() bool { return g.service.name == "" }

var (
	classicGroup  = group{name: rowClassic, ns: classicNS, selector: "app=" + classicNS}
	fooGroup      = group{name: rowFoo, ns: fooSystem, selector: fooReconciler.selector(), service: fooReconciler}
	servingGroup  = group{name: rowServing, ns: servingNS}
	eventingGroup = group{name: rowEventing, ns: eventsNS, exclude: brokerPlane}
	brokerGroup   = group{name: rowBrokerPlane, ns: eventsNS, prefixes: brokerPlane}
)

// directGroups are the rows of phase 1 (the broker's data plane is
// installed with Eventing here, but direct wiring does not use it).
func directGroups() []group {
	return []group{
		classicGroup, fooGroup,
		{name: rowFooAdapter, ns: fooSystem, selector: adapterSelector},
		brokerGroup, servingGroup, eventingGroup,
	}
}

// streamGroups are the rows of phase 2.
func streamGroups() []group {
	return []group{
		classicGroup, fooGroup,
		{name: rowBar, ns: barSystem, selector: barReconciler.selector(), service: barReconciler},
		{name: rowStreamAdapter, ns: streamNS, selector: adapterSelector},
		{name: rowDeadLetters, ns: streamNS, selector: deadLetters.selector(), service: deadLetters},
		brokerGroup, servingGroup, eventingGroup,
	}
}

// phase is the idle bill of one phase.
type phase struct {
	Name          string    `json:"name"`
	Start         time.Time `json:"start"`
	WindowSeconds float64   `json:"windowSeconds"`
	// PingInWindow: the hourly resync ping (at minute 0) fell in the
	// window, so the reconcilers were woken by it there.
	PingInWindow bool `json:"pingInWindow"`
	// Objects is how many of each kind the cluster held at the start.
	Objects       map[kind]int  `json:"objects"`
	Rows          []footprint   `json:"rows"`
	HostProcesses []hostProcess `json:"hostProcesses"`
	// PingWakes are the reconcilers' wake-ups by one resync ping fired
	// after the window (see firePings).
	PingWakes []pingWake `json:"pingWakes"`
}

// row returns the phase's row of that name, and whether it has one.
func (ph phase) row(name string) (footprint, bool) {
	for _, f := range ph.Rows {
		if f.Row == name {
			return f, true
		}
	}
	return footprint{}, false
}

// footprint is what a group's pods held and used over an idle window.
type footprint struct {
	Row      string `json:"row"`
	AlwaysOn bool   `json:"alwaysOn"`
	// MaxPods is the most pods at once; Pods names every pod seen.
	MaxPods int      `json:"maxPods"`
	Pods    []string `json:"pods"`
	// PodSeconds counts each pod from its creation until it is gone
	// (terminating included).
	PodSeconds        float64 `json:"podSeconds"`
	PodSecondsPerHour float64 `json:"podSecondsPerHour"`
	// The pods' working set summed: its peak over the samples, and its mean
	// over the window (0 while no pod runs).
	PeakWorkingSetMiB float64 `json:"peakWorkingSetMiB"`
	MeanWorkingSetMiB float64 `json:"meanWorkingSetMiB"`
	// CPUMillicores is the pods' CPU over the window, per second.
	CPUMillicores float64 `json:"cpuMillicores"`
	// Requests, time-weighted: always-on pods, their specs' containers';
	// pods that scale to zero, their revision Deployment's template
	// (Template*) times PodFraction, the share of the window a pod existed.
	RequestsCPUMillicores float64 `json:"requestsCpuMillicores"`
	RequestsMemoryMiB     float64 `json:"requestsMemoryMiB"`
	Revision              string  `json:"revision,omitempty"`
	TemplateCPUMillicores float64 `json:"templateCpuMillicores,omitempty"`
	TemplateMemoryMiB     float64 `json:"templateMemoryMiB,omitempty"`
	PodFraction           float64 `json:"podFraction,omitempty"`
}

// tally adds up a group's samples over a window.
type tally struct {
	g        group
	selector labels.Selector
	fp       footprint
	seen     map[string]bool
	// atStart are the pods of the window's first sample: their CPU counts
	// from their first reading; a pod made later, from its start.
	atStart           map[string]bool
	cpuFirst, cpuLast map[string]uint64
	wsSum             float64
	// Requests times the seconds they were held.
	reqCPU, reqMem float64
}

// newTally starts the tally of a group.
func newTally(g group) (*tally, error) {
	sel, err := labels.Parse(g.selector)
	if err != nil {
		return nil, fmt.Errorf("row %q: selector %q: %w", g.name, g.selector, err)
	}
	return &tally{
		g: g, selector: sel, fp: footprint{Row: g.name, AlwaysOn: g.alwaysOn()},
		seen: map[string]bool{}, atStart: map[string]bool{}, cpuFirst: map[string]uint64{}, cpuLast: map[string]uint64{},
	}, nil
}

// filter keeps the group's pods of its namespace's list.
func (t *tally) filter(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if !t.selector.Matches(labels.Set(p.Labels)) {
			continue
		}
		if len(t.g.prefixes) > 0 && !hasPrefix(p.Name, t.g.prefixes) {
			continue
		}
		if hasPrefix(p.Name, t.g.exclude) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// hasPrefix tells whether s starts with one of the prefixes.
func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// addPods counts the group's pods of a sample, held for dt seconds.
func (t *tally) addPods(pods []corev1.Pod, dt float64, first bool) {
	t.fp.MaxPods = max(t.fp.MaxPods, len(pods))
	t.fp.PodSeconds += float64(len(pods)) * dt
	for _, p := range pods {
		if first {
			t.atStart[p.Name] = true
		}
		if !t.seen[p.Name] {
			t.seen[p.Name] = true
			t.fp.Pods = append(t.fp.Pods, p.Name)
		}
		cpu, mem := podRequests(p.Spec.Containers)
		t.reqCPU += cpu * dt
		t.reqMem += mem * dt
	}
}

// addStats adds the kubelet's figures of the group's pods.
func (t *tally) addStats(pods []corev1.Pod, st map[string]podStats) {
	ws := 0.0
	for _, p := range pods {
		s, ok := st[p.Namespace+"/"+p.Name]
		if !ok {
			continue
		}
		ws += float64(s.workingSet) / (1 << 20)
		if _, ok := t.cpuFirst[p.Name]; !ok {
			t.cpuFirst[p.Name] = 0
			if t.atStart[p.Name] {
				t.cpuFirst[p.Name] = s.cpu
			}
		}
		t.cpuLast[p.Name] = s.cpu
	}
	t.fp.PeakWorkingSetMiB = max(t.fp.PeakWorkingSetMiB, ws)
	t.wsSum += ws
}

// finish turns the sums into the footprint over a window of that many
// seconds, with that many readings of the kubelet.
func (t *tally) finish(ctx context.Context, window float64, readings int) (footprint, error) {
	fp := t.fp
	fp.PodSecondsPerHour = fp.PodSeconds * 3600 / window
	fp.MeanWorkingSetMiB = t.wsSum / float64(max(readings, 1))
	var cpu uint64
	for name, last := range t.cpuLast {
		if first := t.cpuFirst[name]; last >= first {
			cpu += last - first
		} else {
			cpu += last // restarted: counts from zero again
		}
	}
	fp.CPUMillicores = float64(cpu) / window / 1e6
	if t.g.alwaysOn() {
		fp.RequestsCPUMillicores, fp.RequestsMemoryMiB = t.reqCPU/window, t.reqMem/window
		return fp, nil
	}
	rev, cpuReq, memReq, err := templateRequests(ctx, t.g.service)
	if err != nil {
		return fp, err
	}
	fp.Revision, fp.TemplateCPUMillicores, fp.TemplateMemoryMiB = rev, cpuReq, memReq
	fp.PodFraction = fp.PodSeconds / window
	fp.RequestsCPUMillicores, fp.RequestsMemoryMiB = cpuReq*fp.PodFraction, memReq*fp.PodFraction
	return fp, nil
}

// podRequests sums the containers' requests: CPU in millicores, memory in
// MiB. (Init containers, which end before the others start, are left out.)
func podRequests(containers []corev1.Container) (cpu, mem float64) {
	for _, c := range containers {
		cpu += float64(c.Resources.Requests.Cpu().MilliValue())
		mem += float64(c.Resources.Requests.Memory().Value()) / (1 << 20)
	}
	return cpu, mem
}

// templateRequests reads the requests of the pods the Knative Service's
// latest ready revision makes: its Deployment's pod template, queue-proxy
// included.
func templateRequests(ctx context.Context, s knativeService) (revision string, cpu, mem float64, err error) {
	u, err := dyn.Resource(ksvcGVR).Namespace(s.ns).Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return "", 0, 0, fmt.Errorf("reading Knative Service %s: %w", s, err)
	}
	revision, _, _ = unstructured.NestedString(u.Object, "status", "latestReadyRevisionName")
	deps, err := kube.AppsV1().Deployments(s.ns).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/revision=" + revision})
	if err != nil {
		return revision, 0, 0, fmt.Errorf("listing the Deployment of revision %s/%s: %w", s.ns, revision, err)
	}
	if len(deps.Items) != 1 {
		return revision, 0, 0, fmt.Errorf("revision %s/%s has %d Deployments, want 1", s.ns, revision, len(deps.Items))
	}
	cpu, mem = podRequests(deps.Items[0].Spec.Template.Spec.Containers)
	return revision, cpu, mem, nil
}

// measureIdle bills the groups' pods over the window: it lists them every
// second (pod-seconds, requests) and reads the kubelet's figures every
// statsEvery (working set, CPU).
func measureIdle(ctx context.Context, name string, window time.Duration, groups []group) (phase, error) {
	ph := phase{Name: name, Objects: countObjects(ctx)}
	bl, err := newBill(groups)
	if err != nil {
		return ph, err
	}
	start := time.Now()
	last := start
	var nextStats time.Time
	for first := true; ; {
		now := time.Now()
		end := now.Sub(start) >= window
		read, err := bl.sample(ctx, now.Sub(last).Seconds(), first, end || !now.Before(nextStats))
		if err != nil {
			logf("  a sample skipped: %v", err) // its seconds go to the next one
		} else {
			last, first = now, false
			if read {
				nextStats = now.Add(statsEvery)
			}
			if end {
				break
			}
		}
		select {
		case <-ctx.Done():
			return ph, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	ph.Start, ph.WindowSeconds = start.UTC(), last.Sub(start).Seconds()
	ph.PingInWindow = pingBetween(start, last)
	if ph.Rows, err = bl.footprints(ctx, ph.WindowSeconds); err != nil {
		return ph, err
	}
	ph.HostProcesses = hostProcesses()
	return ph, nil
}

// bill is the tallies of an idle window's groups.
type bill struct {
	tallies []*tally
	// namespaces are the groups', each once.
	namespaces []string
	// readings counts the kubelet's figures read.
	readings int
}

// newBill starts the tallies of the groups.
func newBill(groups []group) (*bill, error) {
	bl := &bill{}
	for _, g := range groups {
		t, err := newTally(g)
		if err != nil {
			return nil, err
		}
		bl.tallies = append(bl.tallies, t)
		if !slices.Contains(bl.namespaces, g.ns) {
			bl.namespaces = append(bl.namespaces, g.ns)
		}
	}
	return bl, nil
}

// sample lists the pods, held for dt seconds since the last sample (first:
// the window's first), and if withStats reads the kubelet's figures too;
// it tells whether it read them (a failed reading is tried again at the
// next sample).
func (bl *bill) sample(ctx context.Context, dt float64, first, withStats bool) (bool, error) {
	pods, err := podsByNamespace(ctx, bl.namespaces)
	if err != nil {
		return false, err
	}
	matched := make([][]corev1.Pod, len(bl.tallies))
	for i, t := range bl.tallies {
		matched[i] = t.filter(pods[t.g.ns])
		t.addPods(matched[i], dt, first)
	}
	if !withStats {
		return false, nil
	}
	st, err := stats(ctx)
	if err != nil {
		logf("  a reading of the kubelet skipped: %v", err)
		return false, nil
	}
	for i, t := range bl.tallies {
		t.addStats(matched[i], st)
	}
	bl.readings++
	return true, nil
}

// footprints are the groups' footprints over a window of that many seconds.
func (bl *bill) footprints(ctx context.Context, window float64) ([]footprint, error) {
	var out []footprint
	for _, t := range bl.tallies {
		fp, err := t.finish(ctx, window, bl.readings)
		if err != nil {
			return nil, err
		}
		out = append(out, fp)
	}
	return out, nil
}

// pingBetween tells whether minute 0 of an hour, when the resync pings
// fire ("0 * * * *"), falls between from and to.
func pingBetween(from, to time.Time) bool {
	hour := from.Truncate(time.Hour)
	return hour.Equal(from) || !hour.Add(time.Hour).After(to)
}

// countObjects counts each kind's objects in the cluster (a kind whose CRD
// is not installed is left out).
func countObjects(ctx context.Context) map[kind]int {
	out := map[kind]int{}
	cached := metav1.ListOptions{ResourceVersion: "0"}
	for _, k := range []kind{oursFoo, classicFoo, bar} {
		if l, err := dyn.Resource(k.gvr()).List(ctx, cached); err == nil {
			out[k] = len(l.Items)
		}
	}
	return out
}
