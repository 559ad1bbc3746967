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

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

// memoryLimitBytes is the reconciler's memory limit in
// config/500-reconciler.yaml (128Mi): the kernel kills the pod above it.
const memoryLimitBytes = 128 << 20

// TestMemory sends the reconciler more than Knative's queue-proxy lets
// through at once (containerConcurrency: 100): (a) 300 events of ~1 MiB at
// once, (b) 4,000 small events at once, all Resource-mode Deployment deletes
// shaped like the adapter's, for Deployments whose Foo does not exist (each
// costs a GET of the Foo). It reads the process's resident memory before, at
// its peak and after each, and requires the peak to stay below the Knative
// Service's memory limit, with the binary's defaults and without the
// GOMEMLIMIT that config/500-reconciler.yaml adds. Every event must be
// answered: reconciled, or 503 (delivered again).
func TestMemory(t *testing.T) {
	ns := namespace(t)
	for _, phase := range []struct {
		name     string
		events   int
		padBytes int
	}{
		{"300 events of ~1 MiB", 300, 1 << 20},
		{"4000 small events", 4000, 0},
	} {
		t.Run(phase.name, func(t *testing.T) {
			// A new process for each phase: Go keeps what it took from the
			// kernel for a while, so one phase would hide the next one's peak.
			if err := env.StopReconciler(); err != nil {
				t.Fatal(err)
			}
			if err := env.StartReconciler(context.Background()); err != nil {
				t.Fatal(err)
			}
			p := env.Reconciler()
			pid := p.PID()
			// Start-up's work done before measuring: a resync is answered
			// once every Foo that needed work is reconciled.
			if _, err := env.Resync(context.Background()); err != nil {
				t.Fatal(err)
			}
			resetPeak(t, pid)
			before := readMemory(t, pid)

			events := make([]event, phase.events)
			for i := range events {
				owner := fmt.Sprintf("gone-%d", i)
				events[i] = event{name: owner + "-web", body: deploymentDeleteEvent(t, ns, owner+"-web", owner, phase.padBytes)}
			}
			sampled := sampleRSS(pid)
			start := time.Now()
			codes := sendAtOnce(ns, events)
			took := time.Since(start)
			maxSampled := sampled()
			peak := readMemory(t, pid)
			time.Sleep(5 * time.Second) // what it keeps a while later: a measurement window
			after := readMemory(t, pid)

			t.Logf("%d events of %d bytes in %v; answers: %s", phase.events, len(events[0].body), took.Round(time.Millisecond), codes)
			t.Logf("VmRSS before %.1f MiB (anonymous %.1f), peak %.1f MiB (VmHWM; largest 10ms sample %.1f), 5s after %.1f MiB (anonymous %.1f)",
				mib(before.rss), mib(before.anon), mib(peak.hwm), mib(maxSampled), mib(after.rss), mib(after.anon))
			if p.Exited() {
				t.Fatalf("the reconciler exited: %s", p.LogTail())
			}
			for _, a := range strings.Split(codes, ", ") {
				if _, code, _ := strings.Cut(a, "× "); code != "200" && !strings.HasPrefix(code, "503 ") {
					t.Errorf("not every event was answered 200 or 503: %s", codes)
					break
				}
			}
			if peak.hwm >= memoryLimitBytes {
				t.Errorf("peak resident memory %.1f MiB is not below the Service's memory limit of %.0f MiB", mib(peak.hwm), mib(memoryLimitBytes))
			}
		})
	}
}

// memory is what /proc/<pid>/status says of a process's resident memory:
// now (and how much of it is anonymous: the Go runtime's, not the binary's
// pages), and at its peak.
type memory struct{ rss, anon, hwm int64 }

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// readMemory reads VmRSS (now) and VmHWM (the peak) of pid.
func readMemory(t *testing.T, pid int) memory {
	t.Helper()
	m, err := procMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func procMemory(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.rss
		case "VmHWM":
			dst = &m.hwm
		case "RssAnon":
			dst = &m.anon
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, s.Text(), err)
		}
		*dst = kb << 10
	}
	if m.rss == 0 || m.hwm == 0 {
		return memory{}, fmt.Errorf("/proc/%d/status has no VmRSS and VmHWM", pid)
	}
	return m, s.Err()
}

// resetPeak sets VmHWM back to VmRSS, so that each phase measures its own
// peak (proc(5): clear_refs, 5).
func resetPeak(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("resetting the peak resident memory: %v", err)
	}
}

// sampleRSS samples VmRSS every 10ms until the returned function is called,
// which returns the largest sample.
func sampleRSS(pid int) func() int64 {
	stop, done := make(chan struct{}), make(chan int64)
	go func() {
		var peak int64
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := procMemory(pid); err == nil {
				peak = max(peak, m.rss)
			}
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 { close(stop); return <-done }
}

// deploymentDeleteEvent is the body of a Resource-mode delete event of a
// Deployment controlled by the Foo named owner, as the adapter sends it: the
// object's last state, padded with pad bytes of environment variables in its
// pod template (and their managedFields), as a big Deployment carries.
func deploymentDeleteEvent(t *testing.T, ns, name, owner string, pad int) []byte {
	t.Helper()
	var env []map[string]string
	fields := map[string]any{}
	for i := range pad / 310 { // what one variable adds, in env and in managedFields
		e := map[string]string{"name": fmt.Sprintf("SETTING_%06d", i), "value": strings.Repeat("v", 200)}
		env = append(env, e)
		fields[fmt.Sprintf(`k:{"name":"%s"}`, e["name"])] = map[string]any{".": map[string]any{}, "f:name": map[string]any{}, "f:value": map[string]any{}}
	}
	obj := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name": name, "namespace": ns, "uid": uuid.NewString(), "resourceVersion": "12345", "generation": 1,
			"creationTimestamp": "2026-11-30T00:00:00Z", "deletionTimestamp": "2026-11-30T00:01:00Z",
			"labels": map[string]string{"app": "nginx", "samplecontroller.knative.io/foo": owner},
			"ownerReferences": []any{map[string]any{
				"apiVersion": "samplecontroller.knative.io/v1alpha1", "kind": "Foo", "name": owner, "uid": uuid.NewString(),
				"controller": true, "blockOwnerDeletion": true,
			}},
			"managedFields": []any{map[string]any{
				"manager": "foo-reconciler", "operation": "Update", "apiVersion": "apps/v1", "time": "2026-11-30T00:00:00Z",
				"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{
					"f:containers": map[string]any{`k:{"name":"nginx"}`: map[string]any{"f:env": fields}},
				}}}},
			}},
		},
		"spec": map[string]any{
			"replicas": 1,
			"selector": map[string]any{"matchLabels": map[string]string{"app": "nginx", "samplecontroller.knative.io/foo": owner}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]string{"app": "nginx", "samplecontroller.knative.io/foo": owner}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "nginx", "image": "nginx:latest", "env": env}}},
			},
		},
		"status": map[string]any{"observedGeneration": 1, "replicas": 1},
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// event is a Deployment event's body and the Deployment's name.
type event struct {
	name string
	body []byte
}

// sendAtOnce POSTs every event in binary mode, each on its own connection,
// all at once, and returns a summary of the answers.
func sendAtOnce(ns string, events []event) string {
	client := &http.Client{
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: -1, // a connection per event: none kept
			DisableKeepAlives:   true,
		},
		Timeout: 2 * time.Minute,
	}
	defer client.CloseIdleConnections()
	var (
		mu      sync.Mutex
		answers = map[string]int{}
		wg      sync.WaitGroup
		ready   = make(chan struct{})
	)
	for _, e := range events {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			got := sendEvent(client, ns, e)
			mu.Lock()
			answers[got]++
			mu.Unlock()
		}()
	}
	close(ready)
	wg.Wait()
	var out []string
	for k, n := range answers {
		out = append(out, fmt.Sprintf("%d× %s", n, k))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// sendEvent POSTs one event and returns its status code, or what failed.
func sendEvent(client *http.Client, ns string, e event) string {
	name := e.name
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, env.ReconcilerURL, bytes.NewReader(e.body))
	if err != nil {
		return err.Error()
	}
	for k, v := range map[string]string{
		"Ce-Specversion": "1.0",
		"Ce-Id":          uuid.NewString(),
		"Ce-Type":        "dev.knative.apiserver.resource.delete",
		"Ce-Source":      env.CP.RESTConfig.Host,
		"Ce-Subject":     "/apis/apps/v1/namespaces/" + ns + "/deployments/" + name,
		"Ce-Kind":        "Deployment",
		"Ce-Name":        name,
		"Ce-Namespace":   ns,
		"Ce-Apiversion":  "apps/v1",
		"Content-Type":   "application/json",
	} {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed without an answer"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return "timeout"
		}
		return "error: " + err.Error()
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	if resp.StatusCode/100 == 2 {
		return strconv.Itoa(resp.StatusCode)
	}
	// The answer's reason, without what differs from one event to the next.
	return strconv.Itoa(resp.StatusCode) + " " + strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '#'
		}
		return r
	}, strings.TrimSpace(string(msg)))
}
