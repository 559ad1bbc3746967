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
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A burst's CPU: what every process of the node used, from the burst's
// first create to the first reconcile of every Foo, by component. The node
// is the whole cluster (hack/cluster: the control plane and the pods run
// on it), so this is the cluster's CPU bill of that time, and its cores
// bound how fast a burst can go once they are busy.

// cpuReading is the CPU time each process of the node had used, at a time.
type cpuReading struct {
	at    time.Time
	procs map[int]procCPU
}

type procCPU struct {
	seconds float64
	// component: the pod's UID for a process of a pod, else the
	// program's name.
	component string
}

var podUID = regexp.MustCompile(`/pod([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/`)

// readCPU reads /proc. A process that ends between two readings is not
// counted: the cluster's work is done by long-lived ones.
func readCPU() (cpuReading, error) {
	r := cpuReading{at: time.Now(), procs: map[int]procCPU{}}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return r, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		seconds, err := cpuSeconds(pid)
		if err != nil {
			continue // gone
		}
		r.procs[pid] = procCPU{seconds: seconds, component: componentOf(filepath.Join("/proc", e.Name()))}
	}
	return r, nil
}

// cpuSeconds is the user and system CPU time the process has used, from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s).
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

// componentOf names the process of dir: its pod's UID if it runs in one,
// else its program's base name.
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

// burstCPU is the node's CPU over a burst's window, by component.
type burstCPU struct {
	WindowSeconds float64 `json:"windowSeconds"`
	// Seconds is the CPU-seconds of every process; Cores, the cores busy
	// on average (Seconds / WindowSeconds).
	Seconds float64 `json:"seconds"`
	Cores   float64 `json:"cores"`
	// NodeCores is what the node has.
	NodeCores  int            `json:"nodeCores"`
	Components []cpuComponent `json:"components"`
}

type cpuComponent struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// cpuBetween is what was used from a to b, by component: a pod's is named
// by its namespace and its owner (the pod template's, for a ReplicaSet's
// pod), read now.
func cpuBetween(ctx context.Context, a, b cpuReading) (*burstCPU, error) {
	names, err := podComponents(ctx)
	if err != nil {
		return nil, err
	}
	by := map[string]float64{}
	total := 0.0
	for pid, p := range b.procs {
		s := p.seconds
		if before, ok := a.procs[pid]; ok && before.component == p.component {
			s -= before.seconds
		}
		name := p.component
		if n, ok := names[strings.TrimPrefix(name, "pod:")]; ok {
			name = n
		}
		by[name] += s
		total += s
	}
	c := &burstCPU{WindowSeconds: b.at.Sub(a.at).Seconds(), Seconds: total, NodeCores: runtime.NumCPU()}
	c.Cores = total / c.WindowSeconds
	for name, s := range by {
		if s > 0 {
			c.Components = append(c.Components, cpuComponent{Name: name, Seconds: s})
		}
	}
	slices.SortFunc(c.Components, func(x, y cpuComponent) int {
		return cmp.Or(cmp.Compare(y.Seconds, x.Seconds), cmp.Compare(x.Name, y.Name))
	})
	return c, nil
}

// podComponents names each pod (by UID) by its namespace and owner: a
// ReplicaSet's pods by the ReplicaSet's name without its hash.
func podComponents(ctx context.Context) (map[string]string, error) {
	pods, err := kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods for the burst's CPU: %w", err)
	}
	names := map[string]string{}
	for _, p := range pods.Items {
		name := p.Name
		if ref := metav1.GetControllerOf(&p); ref != nil {
			name = ref.Name
			if ref.Kind == "ReplicaSet" {
				if h := p.Labels["pod-template-hash"]; h != "" {
					name = strings.TrimSuffix(name, "-"+h)
				}
			}
		}
		names[string(p.UID)] = p.Namespace + "/" + name
	}
	return names, nil
}

// of is the CPU-seconds of the component named name.
func (c *burstCPU) of(name string) float64 {
	for _, x := range c.Components {
		if x.Name == name {
			return x.Seconds
		}
	}
	return 0
}
