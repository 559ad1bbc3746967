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
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// cpuSeconds reads from /proc what getrusage says of the same process.
func TestCPUSeconds(t *testing.T) {
	var ru syscall.Rusage
	for time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) < 200*time.Millisecond { // work until the process has used 0.2 s
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
	}
	got, err := cpuSeconds(os.Getpid())
	if want := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(); err != nil || got < want-0.05 || got > want+0.05 {
		t.Errorf("cpuSeconds = %.2f s, %v; getrusage says %.2f s", got, err, want)
	}
}

// cpuBetween counts what each process used between the readings (a PID
// reused by another process from its start) and sums it by component, pods
// by their names.
func TestCPUBetween(t *testing.T) {
	at := time.Now()
	a := cpuReading{at, map[[2]string]float64{{"1", "kube-apiserver"}: 10, {"2", "pod:u1"}: 5, {"3", "pod:u2"}: 7, {"4", "etcd"}: 100}}
	b := cpuReading{at.Add(4 * time.Second), map[[2]string]float64{
		{"1", "kube-apiserver"}: 13, {"2", "pod:u1"}: 6, {"3", "pod:u2"}: 7, {"5", "pod:u1"}: 0.5, {"4", "traefik"}: 1,
	}}
	got := cpuBetween(a, b, map[string]string{"pod:u1": "foo-operator/foo-reconciler", "pod:u2": "knative-serving/activator"})
	want := &burstCPU{WindowSeconds: 4, Seconds: 5.5, Cores: 5.5 / 4, NodeCores: got.NodeCores,
		Components: []cpuComponent{{"kube-apiserver", 3}, {"foo-operator/foo-reconciler", 1.5}, {"traefik", 1}}}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("cpuBetween (-want, +got):\n%s", diff)
	}
}
