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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/onenode"
)

// auditLog is the cluster's audit log: every request of the ServiceAccounts
// of foo-operator, bar-operator and operator-stream (hack/cluster/up.sh).
var auditLog = onenode.AuditLog("")

// reconcilerUser is the Foo reconciler's identity.
const reconcilerUser = "system:serviceaccount:" + fooSystem + ":foo-reconciler"

// burstSpec is a side of a burst pair: who reconciles, what, where.
type burstSpec struct {
	side string
	kind kind
	ns   string
}

// burstResult is what a burst took, in seconds from the first create (0:
// not reached): the last create answered, every Foo reconciled once, every
// Deployment observed by the deployment controller, every Foo Ready (ours).
type burstResult struct {
	Side                          string      `json:"side"`
	Pair                          string      `json:"pair"`
	Order                         int         `json:"order"`
	Namespace                     string      `json:"namespace"`
	Foos                          int         `json:"foos"`
	CreatedSeconds                float64     `json:"createdSeconds"`
	FirstReconcileAllSeconds      float64     `json:"firstReconcileAllSeconds"`
	DeploymentsObservedAllSeconds float64     `json:"deploymentsObservedAllSeconds"`
	ReadyAllSeconds               float64     `json:"readyAllSeconds,omitempty"`
	Audit                         *auditTable `json:"audit,omitempty"` // ours
	CPU                           *burstCPU   `json:"cpu,omitempty"`
}

// runBurst creates n Foos at once in the side's namespace, emptied first,
// once the path is ready, and times them; then (ours) reads our
// reconciler's requests from the audit log or (the classic's) deletes them.
func runBurst(ctx context.Context, w wiring, spec burstSpec, pair string, order, n int) (burstResult, error) {
	res := burstResult{Side: spec.side, Pair: pair, Order: order, Namespace: spec.ns, Foos: n}
	b := batch{spec.kind, spec.ns}
	logf("burst of %d Foos: %s (%s pair, %d of 2); preparing", n, spec.side, pair, order)
	err := steps(ctx, b.empty, deploymentsSettled, w.delivers,
		func(ctx context.Context) error { return atZero(ctx, true, w.reconcilers...) },
		deploymentsSettled) // the canary's
	if err != nil {
		return res, fmt.Errorf("preparing the burst in %s: %w", spec.ns, err)
	}
	offset, err := controlplane.AuditLogEnd(auditLog)
	if err != nil {
		return res, err
	}
	start, err := follow(ctx, b, n, &res)
	if err != nil {
		return res, err
	}
	logf("  every Foo reconciled at %.1f s, every Deployment observed at %.1f s, every Foo Ready at %.1f s",
		res.FirstReconcileAllSeconds, res.DeploymentsObservedAllSeconds, res.ReadyAllSeconds)
	if spec.kind == classicFoo {
		return res, b.empty(ctx)
	}
	if err := atZero(ctx, true, fooReconciler); err != nil { // its last requests are in the log then
		return res, err
	}
	entries, _, err := controlplane.ReadAuditLog(auditLog, offset, reconcilerUser, "")
	res.Audit = breakdown(entries, start)
	return res, err
}

// follow creates the batch's n objects at once and samples its namespace
// every half second until every milestone is reached and every create
// answered, with the node's CPU until the first reconcile of every Foo. It
// returns when the burst started.
func follow(ctx context.Context, b batch, n int, res *burstResult) (time.Time, error) {
	before, err := readCPU()
	if err != nil {
		return time.Time{}, err
	}
	start, created := time.Now(), make(chan error, 1)
	go func() { created <- b.create(ctx, n) }()
	allCreated := false
	return start, poll(ctx, 500*time.Millisecond, 30*time.Minute, "the burst in "+b.ns, func(ctx context.Context) (bool, error) {
		select {
		case err := <-created:
			if err != nil {
				return false, err
			}
			allCreated, res.CreatedSeconds = true, time.Since(start).Seconds()
		default:
		}
		p, err := b.progress(ctx)
		if err != nil {
			return false, nil
		}
		now, all := time.Since(start).Seconds(), p.objects == n
		if reach(&res.FirstReconcileAllSeconds, all && p.reconciled == n, now) {
			if res.CPU, err = cpuSince(ctx, before); err != nil {
				return false, err
			}
		}
		reach(&res.DeploymentsObservedAllSeconds, all && p.observed == n, now)
		if b.kind == oursFoo {
			reach(&res.ReadyAllSeconds, all && p.ready == n, now)
		}
		return allCreated && res.FirstReconcileAllSeconds > 0 && res.DeploymentsObservedAllSeconds > 0 &&
			(b.kind != oursFoo || res.ReadyAllSeconds > 0), nil
	})
}

// reach sets *at to now the first time cond holds, and tells whether it did.
func reach(at *float64, cond bool, now float64) bool {
	if *at == 0 && cond {
		*at = now
		return true
	}
	return false
}

// auditTable is a user's requests by second from a start: Columns are the
// kinds of request ("verb resource[/subresource]"), the most frequent
// first; Rows the seconds with a request, in order.
type auditTable struct {
	User     string     `json:"user"`
	Requests int        `json:"requests"`
	Columns  []string   `json:"columns"`
	Rows     []auditRow `json:"rows"`
}

// auditRow is one second's requests, counted by column.
type auditRow struct {
	Second int   `json:"second"`
	Counts []int `json:"counts"`
}

// breakdown bins our reconciler's requests by the second they were
// received in, from start.
func breakdown(entries []controlplane.AuditEvent, start time.Time) *auditTable {
	t := &auditTable{User: reconcilerUser, Requests: len(entries)}
	totals, bySecond := map[string]int{}, map[int]map[string]int{}
	for _, e := range entries {
		k := e.Verb + " " + e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			k += "/" + e.ObjectRef.Subresource
		}
		s := int(math.Floor(e.Received.Sub(start).Seconds()))
		if bySecond[s] == nil {
			bySecond[s] = map[string]int{}
		}
		totals[k]++
		bySecond[s][k]++
	}
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

// cpuReading is the CPU time each process of the node had used, at a time,
// and what it is part of: its pod ("pod:" and the pod's UID), else its
// program. The node is the whole cluster (control plane and pods), so the
// difference of two readings is the cluster's CPU bill between them.
type cpuReading struct {
	at    time.Time
	procs map[int]procCPU
}

type procCPU struct {
	seconds   float64
	component string
}

var podUID = regexp.MustCompile(`/pod([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/`)

// readCPU reads /proc. A process that ends between two readings is not
// counted: the cluster's work is done by long-lived ones.
func readCPU() (cpuReading, error) {
	r := cpuReading{at: time.Now(), procs: map[int]procCPU{}}
	entries, err := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if seconds, err := cpuSeconds(pid); err == nil { // else gone
			r.procs[pid] = procCPU{seconds, componentOf(filepath.Join("/proc", e.Name()))}
		}
	}
	return r, err
}

// cpuSeconds is the user and system CPU time the process has used, from
// /proc/<pid>/stat (fields 14 and 15, in ticks of 1/100 s).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count from after it.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	user, _ := strconv.ParseFloat(fields[11], 64)
	system, _ := strconv.ParseFloat(fields[12], 64)
	return (user + system) / 100, nil
}

// componentOf names the process of dir: its pod if it runs in one, else its
// program's base name.
func componentOf(dir string) string {
	if cg, err := os.ReadFile(filepath.Join(dir, "cgroup")); err == nil {
		if m := podUID.FindSubmatch(cg); m != nil {
			return "pod:" + string(m[1])
		}
	}
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil || len(cmdline) == 0 {
		return "(kernel)"
	}
	arg0, _, _ := strings.Cut(string(cmdline), "\x00")
	return filepath.Base(arg0)
}

// burstCPU is the node's CPU over a burst's window: CPU-seconds of every
// process, and by component; Cores is the cores busy on average, of the
// node's NodeCores.
type burstCPU struct {
	WindowSeconds float64            `json:"windowSeconds"`
	Seconds       float64            `json:"seconds"`
	Cores         float64            `json:"cores"`
	NodeCores     int                `json:"nodeCores"`
	Components    map[string]float64 `json:"components"`
}

// cpuSince is the node's CPU from the reading a until now, by component, a
// pod's named by its namespace and owner (the pod template's, for a
// ReplicaSet's pod).
func cpuSince(ctx context.Context, a cpuReading) (*burstCPU, error) {
	b, err := readCPU()
	if err != nil {
		return nil, err
	}
	pods, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods for the burst's CPU: %w", err)
	}
	names := map[string]string{}
	for _, p := range pods.Items {
		name := p.Name
		if ref := metav1.GetControllerOf(&p); ref != nil {
			name = strings.TrimSuffix(ref.Name, "-"+p.Labels["pod-template-hash"])
		}
		names["pod:"+string(p.UID)] = p.Namespace + "/" + name
	}
	return cpuBetween(a, b, names), nil
}

// cpuBetween is what the processes used from a to b, by component, renamed
// by names; a process whose PID was reused counts from its start.
func cpuBetween(a, b cpuReading, names map[string]string) *burstCPU {
	c := &burstCPU{WindowSeconds: b.at.Sub(a.at).Seconds(), NodeCores: runtime.NumCPU(), Components: map[string]float64{}}
	for pid, p := range b.procs {
		s := p.seconds
		if before, ok := a.procs[pid]; ok && before.component == p.component {
			s -= before.seconds
		}
		c.Components[cmp.Or(names[p.component], p.component)] += s
		c.Seconds += s
	}
	c.Cores = c.Seconds / c.WindowSeconds
	maps.DeleteFunc(c.Components, func(_ string, s float64) bool { return s <= 0 })
	return c
}
