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
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// cpuSeconds reads from /proc what getrusage says of the same process.
func TestCPUSeconds(t *testing.T) {
	var want float64
	for want < 0.2 { // work until the process has used 0.2 s
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		want = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)).Seconds()
	}
	got, err := cpuSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-want) > 0.05 {
		t.Errorf("cpuSeconds = %.2f s, getrusage says %.2f s", got, want)
	}
}

// cpuBetween counts what each process used between the readings, a PID
// reused by another process from its start, and sums by component, pods by
// their names.
func TestCPUBetween(t *testing.T) {
	at := time.Now()
	a := cpuReading{at: at, procs: map[int]procCPU{1: {10, "kube-apiserver"}, 2: {5, "pod:u1"}, 3: {7, "pod:u2"}, 4: {100, "etcd"}}}
	b := cpuReading{at: at.Add(4 * time.Second), procs: map[int]procCPU{
		1: {13, "kube-apiserver"}, 2: {6, "pod:u1"}, 3: {7, "pod:u2"}, 5: {0.5, "pod:u1"}, 4: {1, "traefik"},
	}}
	got := cpuBetween(a, b, map[string]string{"pod:u1": "foo-operator/foo-reconciler", "pod:u2": "knative-serving/activator"})
	want := &burstCPU{WindowSeconds: 4, Seconds: 5.5, Cores: 5.5 / 4, NodeCores: got.NodeCores,
		Components: map[string]float64{"kube-apiserver": 3, "foo-operator/foo-reconciler": 1.5, "traefik": 1}}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("cpuBetween (-want, +got):\n%s", diff)
	}
}
