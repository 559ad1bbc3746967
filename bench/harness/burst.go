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

package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/frugal-operator/foo-operator/test/controlplane"
)

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// updatedReplicas is what an update burst sets every Foo's replicas to
// (they are made with 1).
const updatedReplicas = 2

// milestones records when each object was first seen at each milestone.
type milestones struct {
	mu sync.Mutex
	at map[string]map[string]time.Time // milestone -> name -> first seen
}

func newMilestones() *milestones { return &milestones{at: map[string]map[string]time.Time{}} }

// mark records that name reached milestone now, unless it did before.
func (m *milestones) mark(milestone, name string) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.at[milestone] == nil {
		m.at[milestone] = map[string]time.Time{}
	}
	if _, ok := m.at[milestone][name]; !ok {
		m.at[milestone][name] = now
	}
}

// count is how many objects reached the milestone.
func (m *milestones) count(milestone string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.at[milestone])
}

// done returns the time the last object reached both milestones a and b
// (first if none did), and each object's latency from "created" to both.
func (m *milestones) done(first time.Time, a, b string) (time.Time, []float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last, lat := first, []float64(nil)
	for name, c := range m.at["created"] {
		x, y := m.at[a][name], m.at[b][name]
		done := x
		if y.After(done) {
			done = y
		}
		if done.After(last) {
			last = done
		}
		if !x.IsZero() && !y.IsZero() {
			lat = append(lat, ms(done.Sub(c)))
		}
	}
	return last, lat
}

// watchFrom watches a resource of ns from now and calls seen with each
// object it reports until ctx ends. The watch has a connection of its own
// (the creates would share one HTTP/2 connection with it otherwise) and
// resumes where it was if the server ends it.
func (r *run) watchFrom(ctx context.Context, g schema.GroupVersionResource, ns string, seen func(watch.EventType, *unstructured.Unstructured)) error {
	wc := rest.CopyConfig(r.cp.RESTConfig)
	wc.Dial = (&net.Dialer{}).DialContext // an uncached transport: its own connection
	res := dynamic.NewForConfigOrDie(wc).Resource(g).Namespace(ns)
	// Any list's resourceVersion is "now".
	now, err := res.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, now.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return res.Watch(ctx, o) },
	})
	if err != nil {
		return err
	}
	go func() {
		for e := range w.ResultChan() {
			if u, ok := e.Object.(*unstructured.Unstructured); ok {
				seen(e.Type, u)
			}
		}
	}()
	return nil
}

// waitFor polls cond until it holds, failing if the controller exits.
func waitFor(ctx context.Context, p *controlplane.Process, cond func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 15*time.Minute, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("%s exited: %s", p.Name, p.LogTail())
		}
		return cond(), nil
	})
}

// burst creates res.Burst Foos at once in namespace ns and times them, from
// watches on the harness's side, until every Deployment is made and every
// status written; then counts the requests the burst cost per Foo.
func (r *run) burst(ctx context.Context, res *Result, p *controlplane.Process, classic bool, ns string) error {
	b := res.Burst
	r.cfg.Log("N=%d: %s: burst of %d Foos", r.n, res.Controller, b)
	if err := r.namespace(ctx, ns); err != nil {
		return err
	}
	m := newMilestones()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := r.watchFrom(wctx, deploymentsGVR, ns, func(t watch.EventType, u *unstructured.Unstructured) {
		if t == watch.Added {
			m.mark("deployment", u.GetName())
		}
	}); err != nil {
		return err
	}
	if err := r.watchFrom(wctx, gvr(classic), ns, func(_ watch.EventType, u *unstructured.Unstructured) {
		if written(u, classic, 1) {
			m.mark("status", u.GetName())
		}
	}); err != nil {
		return err
	}
	before, err := requestCounts(ctx, r.kube)
	if err != nil {
		return err
	}
	cpu0 := r.cpu(p)
	first := time.Now()
	if err := parallel(b, func(i int) error {
		name := fmt.Sprintf("b-%d", i)
		_, err := r.createFoo(ctx, classic, ns, name)
		m.mark("created", name)
		return err
	}); err != nil {
		return err
	}
	err = waitFor(ctx, p, func() bool { return m.count("deployment") >= b && m.count("status") >= b })
	last, lat := m.done(first, "deployment", "status")
	res.BurstSeconds = last.Sub(first).Seconds()
	res.BurstCPU = delta(cpu0, r.cpu(p))
	if err != nil {
		res.Incomplete = fmt.Sprintf("burst: %d of %d reconciled: %v", len(lat), b, err)
		return err
	}
	sort.Float64s(lat)
	res.P50Ms, res.P99Ms = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	r.settle(ctx)
	return r.burstRequests(ctx, res, before)
}

// updateBurst gives every Foo of the burst in ns updatedReplicas at once,
// once the burst is done and settled, and records the time from the first
// update until every Deployment has that count and, ours, every Foo's status
// reports its new generation.
func (r *run) updateBurst(ctx context.Context, res *Result, p *controlplane.Process, classic bool, ns string) error {
	b := res.Burst
	r.cfg.Log("N=%d: %s: update burst of %d Foos", r.n, res.Controller, b)
	m := newMilestones()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := r.watchFrom(wctx, deploymentsGVR, ns, func(_ watch.EventType, u *unstructured.Unstructured) {
		if n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); n == updatedReplicas {
			m.mark("deployment", u.GetName())
		}
	}); err != nil {
		return err
	}
	if !classic {
		if err := r.watchFrom(wctx, oursGVR, ns, func(_ watch.EventType, u *unstructured.Unstructured) {
			if written(u, false, 2) {
				m.mark("status", u.GetName())
			}
		}); err != nil {
			return err
		}
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, updatedReplicas))
	first := time.Now()
	if err := parallel(b, func(i int) error {
		_, err := r.dyn.Resource(gvr(classic)).Namespace(ns).Patch(ctx, fmt.Sprintf("b-%d", i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		return err
	}
	var done time.Time
	err := waitFor(ctx, p, func() bool {
		done = time.Now()
		return m.count("deployment") >= b && (classic || m.count("status") >= b)
	})
	if err != nil {
		res.Incomplete = fmt.Sprintf("update burst: %d of %d Deployments updated, %d statuses: %v", m.count("deployment"), b, m.count("status"), err)
		return err
	}
	res.UpdateSeconds = done.Sub(first).Seconds()
	r.settle(ctx)
	return nil
}

// cpu returns the CPU seconds the processes a burst involves have used, by
// role, and the machine's idle CPU seconds ("machine idle").
func (r *run) cpu(controller *controlplane.Process) map[string]float64 {
	m := map[string]float64{}
	add := func(role string, pid int) {
		if c, err := cpuSeconds(pid); err == nil {
			m[role] += c
		}
	}
	add("kube-apiserver", r.cp.APIServer.PID())
	add("etcd", r.cp.Etcd.PID())
	add("controller", controller.PID())
	for _, a := range r.adapters {
		add("adapters", a.PID())
	}
	add("harness", os.Getpid())
	if idle, err := machineIdleSeconds(); err == nil {
		m["machine idle"] = idle
	}
	return m
}
