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
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/onenode"
)

// reconcilerUser is the Foo reconciler's identity in the audit log.
const reconcilerUser = "system:serviceaccount:" + fooSystem + ":foo-reconciler"

var auditLog = onenode.AuditLog("")

// burstSpec is a side of a burst pair: who reconciles, what, where, and
// how many of our reconciler's pods are kept warm meanwhile (min-scale; 0:
// ours starts from zero, and the classic's burst has it at zero).
type burstSpec struct {
	side string
	kind kind
	ns   string
	warm int
}

// burstResult is what a burst took, in seconds from the first create (0:
// not reached).
type burstResult struct {
	Side                          string  `json:"side"`
	Pair                          string  `json:"pair"`
	Order                         int     `json:"order"`
	Namespace                     string  `json:"namespace"`
	CreatedSeconds                float64 `json:"createdSeconds"`
	FirstReconcileAllSeconds      float64 `json:"firstReconcileAllSeconds"`
	DeploymentsObservedAllSeconds float64 `json:"deploymentsObservedAllSeconds"`
	ReadyAllSeconds               float64 `json:"readyAllSeconds,omitempty"`
	// MostPods is the most pods of our reconciler seen at once (sampled
	// with the milestones), not counting those being deleted.
	MostPods int         `json:"mostPods,omitempty"`
	CPU      *burstCPU   `json:"cpu,omitempty"`
	Audit    *auditTable `json:"audit,omitempty"`
}

// runBurst times n Foos created at once once the path is ready, then reads
// our reconciler's requests from the audit log or deletes the classic's.
// untilReconciled ends the burst at the first reconcile of every Foo,
// deletes its objects, ours too, and reads our requests until then.
func runBurst(ctx context.Context, w wiring, spec burstSpec, pair string, order, n int, untilReconciled bool) (burstResult, error) {
	res, b := burstResult{Side: spec.side, Pair: pair, Order: order, Namespace: spec.ns}, batch{spec.kind, spec.ns}
	logf("burst of %d Foos: %s (%s pair, %d of 2)", n, spec.side, pair, order)
	before := func(ctx context.Context) error { return atZero(ctx, true, w.reconcilers...) }
	if spec.warm > 0 {
		before = func(ctx context.Context) error { return warm(ctx, fooReconciler, spec.warm) }
	}
	if err := steps(ctx, b.empty, deploymentsSettled, w.delivers, before, deploymentsSettled); err != nil {
		return res, fmt.Errorf("preparing the burst in %s: %w", spec.ns, err)
	}
	offset, err := controlplane.AuditLogEnd(auditLog)
	if err != nil {
		return res, err
	}
	start, err := res.follow(ctx, b, n, untilReconciled)
	if err != nil {
		return res, err
	} else if spec.kind == classicFoo || untilReconciled {
		if err := b.empty(ctx); err != nil || spec.kind == classicFoo {
			return res, err
		}
	}
	after := func(ctx context.Context) error { return atZero(ctx, true, fooReconciler) } // its last requests are in the log then
	if spec.warm > 0 {
		after = func(ctx context.Context) error { return quiet(ctx, offset) }
	}
	if err := after(ctx); err != nil {
		return res, err
	}
	entries, _, err := controlplane.ReadAuditLog(auditLog, offset, reconcilerUser, "")
	if untilReconciled {
		end := start.Add(time.Duration(res.FirstReconcileAllSeconds * float64(time.Second)))
		entries = slices.DeleteFunc(entries, func(e controlplane.AuditEvent) bool { return e.Received.After(end) })
	}
	res.Audit = breakdown(entries, start)
	return res, err
}

// warm waits until s has n ready pods, none being deleted.
func warm(ctx context.Context, s knativeService, n int) error {
	return poll(ctx, 250*time.Millisecond, 5*time.Minute, fmt.Sprintf("%d ready pods of %s", n, s), func(ctx context.Context) (bool, error) {
		pods, err := podsOf(ctx, s.ns, s.selector())
		ready := 0
		for _, p := range pods {
			if p.DeletionTimestamp == nil && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			}) {
				ready++
			}
		}
		return err == nil && ready == n, nil
	})
}

// quiet waits until our reconciler, its pods kept warm, has made no request
// but its Leases' for 5 s: its burst is over, and its requests since offset
// are in the audit log.
func quiet(ctx context.Context, offset int64) error {
	return poll(ctx, time.Second, 10*time.Minute, "our reconciler quiet", func(context.Context) (bool, error) {
		entries, _, err := controlplane.ReadAuditLog(auditLog, offset, reconcilerUser, "")
		if err != nil {
			return false, err
		}
		for _, e := range slices.Backward(entries) {
			if e.ObjectRef.Resource != "leases" {
				return time.Since(e.Received.Time) > 5*time.Second, nil
			}
		}
		return true, nil
	})
}

// follow creates the n objects and samples them every half second until
// every milestone is reached (untilReconciled: the first reconcile of every
// Foo), returning when the burst started.
func (res *burstResult) follow(ctx context.Context, b batch, n int, untilReconciled bool) (time.Time, error) {
	before, err := readCPU()
	requestsBefore, err2 := apiServerRequests(ctx)
	start, created := time.Now(), make(chan error, 1)
	if err = errors.Join(err, err2); err != nil {
		return start, err
	}
	go func() { created <- b.create(ctx, n) }()
	reach := func(at *float64, cond bool) bool {
		if *at == 0 && cond {
			*at = time.Since(start).Seconds()
			return true
		}
		return false
	}
	err = poll(ctx, 500*time.Millisecond, 30*time.Minute, "the burst in "+b.ns, func(ctx context.Context) (bool, error) {
		select {
		case err := <-created:
			if res.CreatedSeconds = time.Since(start).Seconds(); err != nil {
				return false, err
			}
		default:
		}
		p, err := b.progress(ctx)
		if err != nil {
			return false, nil // asked again
		}
		if b.kind == oursFoo {
			pods, err := podsOf(ctx, fooReconciler.ns, fooReconciler.selector())
			if err != nil {
				return false, nil
			}
			res.MostPods = max(res.MostPods, len(slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })))
		}
		if reach(&res.FirstReconcileAllSeconds, p.objects == n && p.reconciled == n) {
			requests, err := apiServerRequests(ctx)
			if res.CPU, err2 = cpuSince(ctx, before); errors.Join(err, err2) != nil {
				return false, errors.Join(err, err2)
			}
			res.CPU.APIServerRequests = requests - requestsBefore
		}
		reach(&res.DeploymentsObservedAllSeconds, p.objects == n && p.observed == n)
		reach(&res.ReadyAllSeconds, b.kind == oursFoo && p.objects == n && p.ready == n)
		return res.CreatedSeconds > 0 && res.FirstReconcileAllSeconds > 0 && (untilReconciled || res.DeploymentsObservedAllSeconds > 0 &&
			(b.kind != oursFoo || res.ReadyAllSeconds > 0)), nil
	})
	logf("  every Foo reconciled at %.1f s, every Deployment observed at %.1f s, every Foo Ready at %.1f s",
		res.FirstReconcileAllSeconds, res.DeploymentsObservedAllSeconds, res.ReadyAllSeconds)
	return start, err
}

// auditTable is requests by second (Rows) and kind, the most frequent first.
type auditTable struct {
	Requests int        `json:"requests"`
	Columns  []string   `json:"columns"`
	Rows     []auditRow `json:"rows"`
}

// auditRow is one second's requests, counted by column.
type auditRow struct {
	Second int   `json:"second"`
	Counts []int `json:"counts"`
}

// breakdown bins the requests by the second they were received in.
func breakdown(entries []controlplane.AuditEvent, start time.Time) *auditTable {
	totals, bySecond := map[string]int{}, map[int]map[string]int{}
	for _, e := range entries {
		k := strings.TrimSuffix(e.Verb+" "+e.ObjectRef.Resource+"/"+e.ObjectRef.Subresource, "/")
		s := int(math.Floor(e.Received.Sub(start).Seconds()))
		if bySecond[s] == nil {
			bySecond[s] = map[string]int{}
		}
		totals[k], bySecond[s][k] = totals[k]+1, bySecond[s][k]+1
	}
	t := &auditTable{Requests: len(entries)}
	t.Columns = slices.SortedFunc(maps.Keys(totals), func(a, b string) int { return cmp.Or(totals[b]-totals[a], cmp.Compare(a, b)) })
	for _, s := range slices.Sorted(maps.Keys(bySecond)) {
		row := auditRow{Second: s}
		for _, k := range t.Columns {
			row.Counts = append(row.Counts, bySecond[s][k])
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// cpuReading is the CPU-seconds each process of the node (the whole
// cluster) had used, by PID and component: "pod:" and its pod's UID, or its
// program.
type cpuReading struct {
	at    time.Time
	procs map[[2]string]float64
}

var podUID = regexp.MustCompile(`/pod([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/`)

// readCPU reads /proc.
func readCPU() (cpuReading, error) {
	r := cpuReading{time.Now(), map[[2]string]float64{}}
	entries, err := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		seconds, err := cpuSeconds(pid)
		if err != nil {
			continue // gone
		}
		component := "(kernel)"
		if cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); len(cmdline) > 0 {
			component = filepath.Base(string(bytes.SplitN(cmdline, []byte{0}, 2)[0]))
		}
		if cgroup, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup")); podUID.Match(cgroup) {
			component = "pod:" + string(podUID.FindSubmatch(cgroup)[1])
		}
		r.procs[[2]string{e.Name(), component}] = seconds
	}
	return r, err
}

// cpuSeconds is the user and system CPU time the process has used, from
// /proc/<pid>/stat (fields 14 and 15, in ticks of 1/100 s).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	// The command name, in parentheses, may hold spaces: count from after it.
	if fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); err == nil && len(fields) >= 13 {
		user, _ := strconv.ParseFloat(fields[11], 64)
		system, _ := strconv.ParseFloat(fields[12], 64)
		return (user + system) / 100, nil
	}
	return 0, fmt.Errorf("reading /proc/%d/stat: %v", pid, err)
}

// burstCPU is the node's CPU-seconds over a burst's window, by component,
// and the requests the API server served meanwhile.
type burstCPU struct {
	WindowSeconds     float64        `json:"windowSeconds"`
	Seconds           float64        `json:"seconds"`
	Cores             float64        `json:"cores"`
	NodeCores         int            `json:"nodeCores"`
	Components        []cpuComponent `json:"components"`
	APIServerRequests float64        `json:"apiServerRequests,omitempty"`
}

type cpuComponent struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// of is the CPU-seconds of the component named name.
func (c *burstCPU) of(name string) float64 {
	i := slices.IndexFunc(c.Components, func(x cpuComponent) bool { return x.Name == name })
	if i < 0 {
		return 0
	}
	return c.Components[i].Seconds
}

// apiServerRequests is how many requests the API server has served, of
// every client: the sum of its apiserver_request_total.
func apiServerRequests(ctx context.Context) (float64, error) {
	metrics, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	sum := 0.0
	for line := range strings.Lines(string(metrics)) {
		if strings.HasPrefix(line, "apiserver_request_total{") {
			fields := strings.Fields(line)
			n, err2 := strconv.ParseFloat(fields[len(fields)-1], 64)
			sum, err = sum+n, errors.Join(err, err2)
		}
	}
	return sum, err
}

// cpuSince is the CPU used since a, a pod's named by namespace and owner.
func cpuSince(ctx context.Context, a cpuReading) (*burstCPU, error) {
	b, err := readCPU()
	if err != nil {
		return nil, err
	}
	pods, err := podsOf(ctx, "", "")
	names := map[string]string{}
	for _, p := range pods {
		name := p.Name
		if ref := metav1.GetControllerOf(&p); ref != nil {
			name = strings.TrimSuffix(ref.Name, "-"+p.Labels["pod-template-hash"])
		}
		names["pod:"+string(p.UID)] = p.Namespace + "/" + name
	}
	return cpuBetween(a, b, names), err
}

// cpuBetween is what the processes used from a to b, by component, renamed
// by names; a process that ended in between is not counted.
func cpuBetween(a, b cpuReading, names map[string]string) *burstCPU {
	c, by := &burstCPU{WindowSeconds: b.at.Sub(a.at).Seconds(), NodeCores: runtime.NumCPU()}, map[string]float64{}
	for proc, s := range b.procs {
		by[cmp.Or(names[proc[1]], proc[1])] += s - a.procs[proc]
		c.Seconds += s - a.procs[proc]
	}
	for _, name := range slices.SortedFunc(maps.Keys(by), func(x, y string) int { return cmp.Or(cmp.Compare(by[y], by[x]), cmp.Compare(x, y)) }) {
		if by[name] > 0 {
			c.Components = append(c.Components, cpuComponent{name, by[name]})
		}
	}
	c.Cores = c.Seconds / c.WindowSeconds
	return c
}
