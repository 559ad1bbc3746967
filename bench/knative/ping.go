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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var pingGVR = schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1", Resource: "pingsources"}

// resyncPing is an operator's resync PingSource, and the Service it wakes.
type resyncPing struct {
	name    string
	service knativeService
}

var (
	fooPing = resyncPing{"foo-resync", fooReconciler}
	barPing = resyncPing{"bar-resync", barReconciler}
)

// pingWake is one resync ping's wake-up, measured as the idle bill counts a
// pod: from the pod's creation until it is gone, terminating included.
type pingWake struct {
	Service string    `json:"service"`
	Fired   time.Time `json:"fired"`
	// PodSeconds is how long a pod of the Service existed for the ping.
	PodSeconds float64 `json:"podSeconds"`
	// HourlyPercent is PodSeconds as a share of an hour: the idle pod-time
	// of the default schedule ("0 * * * *"), with nothing else happening.
	HourlyPercent float64 `json:"hourlyPercent"`
	// PeakWorkingSetMiB is the pod's peak working set (the kubelet's,
	// sampled about every 2 s), and RequestsMemoryMiB its containers'
	// memory requests.
	PeakWorkingSetMiB float64 `json:"peakWorkingSetMiB"`
	RequestsMemoryMiB float64 `json:"requestsMemoryMiB"`
	// TerminatingSeconds is how long of PodSeconds the pod was being
	// deleted: from the autoscaler's delete (its deletionTimestamp less its
	// grace period) until it was gone, queue-proxy's drain mostly.
	TerminatingSeconds float64 `json:"terminatingSeconds"`
}

// hourly is what the wake-up adds to an hour, time-weighted: working set and
// memory requests times the share of the hour a pod existed.
func (w pingWake) hourly() (workingSetMiB, requestsMiB float64) {
	f := w.PodSeconds / 3600
	return w.PeakWorkingSetMiB * f, w.RequestsMemoryMiB * f
}

// firePings makes each resync PingSource fire once, at the next whole
// minute at least 20 s away (its schedule set to that minute, then put back
// to what it was), and measures each Service's wake-up. The Services must be
// at zero. An idle window of minutes cannot wait for the hourly ping, nor
// count it as often as the window's length would say: this is the ping's
// cost, measured once.
func firePings(ctx context.Context, pings ...resyncPing) ([]pingWake, error) {
	for _, p := range pings {
		if err := gone(ctx, 10*time.Minute, p.service); err != nil {
			return nil, err
		}
	}
	at := time.Now().Add(20 * time.Second).Truncate(time.Minute).Add(time.Minute).UTC()
	schedule := fmt.Sprintf("%d %d * * *", at.Minute(), at.Hour())
	logf("  the resync pings fire once at %s (schedule %q)", at.Format("15:04:05"), schedule)
	var was []string
	for _, p := range pings {
		old, err := setSchedule(ctx, p, schedule)
		if err != nil {
			return nil, err
		}
		was = append(was, old)
	}
	defer func() {
		for i, p := range pings {
			if _, err := setSchedule(context.Background(), p, was[i]); err != nil {
				logf("  putting back %s's schedule %q: %v", p.name, was[i], err)
			}
		}
	}()
	var services []knativeService
	for _, p := range pings {
		services = append(services, p.service)
	}
	wakes, err := wakesOf(ctx, at, services)
	for _, w := range wakes {
		logf("  %s: a pod for %.1f s (%.1f s of it terminating; %.2f %% of an hour), peak working set %.1f MiB",
			w.Service, w.PodSeconds, w.TerminatingSeconds, w.HourlyPercent, w.PeakWorkingSetMiB)
	}
	return wakes, err
}

// setSchedule sets a PingSource's schedule and returns the one it had.
func setSchedule(ctx context.Context, p resyncPing, schedule string) (string, error) {
	u, err := dyn.Resource(pingGVR).Namespace(p.service.ns).Get(ctx, p.name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("PingSource %s/%s: %w", p.service.ns, p.name, err)
	}
	old, _, _ := unstructured.NestedString(u.Object, "spec", "schedule")
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"schedule": schedule}})
	if _, err := dyn.Resource(pingGVR).Namespace(p.service.ns).Patch(ctx, p.name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return "", fmt.Errorf("setting PingSource %s/%s's schedule: %w", p.service.ns, p.name, err)
	}
	return old, nil
}

// wakesOf waits, for each Service at once, for its first pod made after
// the ping was due and for every pod of it to be gone, and returns how long
// a pod existed: from the first pod's creation (its timestamp has whole
// seconds) until none was seen.
func wakesOf(ctx context.Context, due time.Time, services []knativeService) ([]pingWake, error) {
	created := make([]time.Time, len(services))
	lastSeen := make([]time.Time, len(services))
	peak := make([]float64, len(services))
	deleted := make([]time.Time, len(services))
	requests := make([]float64, len(services))
	var statsAt time.Time
	err := poll(ctx, 250*time.Millisecond, time.Until(due)+5*time.Minute, "the ping's wake-ups", func(ctx context.Context) (bool, error) {
		done := true
		var st map[string]podStats
		if time.Since(statsAt) > 2*time.Second {
			st, _ = stats(ctx) // a missed reading only lowers the peak
			statsAt = time.Now()
		}
		for i, s := range services {
			pods, err := podsOf(ctx, s.ns, s.selector())
			if err != nil {
				return false, err
			}
			ws := 0.0
			for _, p := range pods {
				ws += float64(st[p.Namespace+"/"+p.Name].workingSet) / (1 << 20)
				_, mem := podRequests(p.Spec.Containers)
				requests[i] = max(requests[i], mem)
				if d := p.DeletionTimestamp; d != nil && p.DeletionGracePeriodSeconds != nil && deleted[i].IsZero() {
					deleted[i] = d.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
				}
			}
			peak[i] = max(peak[i], ws)
			for _, p := range pods {
				if c := p.CreationTimestamp.Time; !c.Before(due.Add(-time.Second)) && (created[i].IsZero() || c.Before(created[i])) {
					created[i] = c
				}
			}
			if len(pods) > 0 {
				lastSeen[i] = time.Now()
			}
			done = done && !created[i].IsZero() && len(pods) == 0
		}
		return done, nil
	})
	var wakes []pingWake
	for i, s := range services {
		w := pingWake{Service: s.String(), Fired: due, PeakWorkingSetMiB: peak[i], RequestsMemoryMiB: requests[i]}
		if !deleted[i].IsZero() {
			w.TerminatingSeconds = lastSeen[i].Sub(deleted[i]).Seconds()
		}
		if !created[i].IsZero() {
			w.PodSeconds = lastSeen[i].Sub(created[i]).Seconds()
			w.HourlyPercent = 100 * w.PodSeconds / 3600
		}
		wakes = append(wakes, w)
	}
	return wakes, err
}
