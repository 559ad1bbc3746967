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
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// What the node says of its pods (the kubelet) and of the cluster's
// processes that are not pods.

// podsByNamespace lists the pods of each namespace.
func podsByNamespace(ctx context.Context, namespaces []string) (map[string][]corev1.Pod, error) {
	out := map[string][]corev1.Pod{}
	for _, ns := range namespaces {
		pods, err := podsOf(ctx, ns, "")
		if err != nil {
			return nil, err
		}
		out[ns] = pods
	}
	return out, nil
}

// podStats is what the kubelet says of a pod: CPU used since it started,
// in core-nanoseconds, and its working set in bytes.
type podStats struct{ cpu, workingSet uint64 }

// summary is the part of the kubelet's /stats/summary read here.
type summary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		CPU struct {
			UsageCoreNanoSeconds uint64 `json:"usageCoreNanoSeconds"`
		} `json:"cpu"`
		Memory struct {
			WorkingSetBytes uint64 `json:"workingSetBytes"`
		} `json:"memory"`
	} `json:"pods"`
}

// stats reads the kubelet's figures of every pod, by "namespace/name".
func stats(ctx context.Context) (map[string]podStats, error) {
	b, err := node.Get().AbsPath("/api/v1/nodes/onenode/proxy/stats/summary").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the kubelet's /stats/summary: %w", err)
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("the kubelet's /stats/summary: %w", err)
	}
	out := map[string]podStats{}
	for _, p := range s.Pods {
		out[p.PodRef.Namespace+"/"+p.PodRef.Name] = podStats{cpu: p.CPU.UsageCoreNanoSeconds, workingSet: p.Memory.WorkingSetBytes}
	}
	return out, nil
}

// hostProcess is a process of the cluster that is not a pod.
type hostProcess struct {
	Name   string  `json:"name"`
	Role   string  `json:"role"`
	RSSMiB float64 `json:"rssMiB,omitempty"`
	Error  string  `json:"error,omitempty"`
}

// hostProcesses reads the resident memory of the cluster's host processes
// that serve Knative's pods (hack/cluster/up.sh runs them outside
// Kubernetes): Traefik, Knative Serving's ingress here, and CoreDNS.
func hostProcesses() []hostProcess {
	var out []hostProcess
	for _, h := range []hostProcess{
		{Name: "traefik", Role: "Knative Serving's ingress, a Knative cost"},
		{Name: "coredns", Role: "the cluster's DNS, which any cluster has"},
	} {
		rss, err := hostRSS(h.Name)
		if err != nil {
			h.Error = err.Error()
		}
		h.RSSMiB = rss
		out = append(out, h)
	}
	return out
}

// hostRSS reads the VmRSS of the process hack/cluster/up.sh started as name.
func hostRSS(name string) (float64, error) {
	b, err := os.ReadFile(filepath.Join("_output", "cluster", "pids", name))
	if err != nil {
		return 0, fmt.Errorf("the PID of %s: %w", name, err)
	}
	status, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(b)), "status"))
	if err != nil {
		return 0, fmt.Errorf("the status of %s: %w", name, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" && f[2] == "kB" {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return 0, fmt.Errorf("the VmRSS of %s: %w", name, err)
			}
			return kb / 1024, nil
		}
	}
	return 0, fmt.Errorf("%s has no VmRSS", name)
}
