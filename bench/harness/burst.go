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
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// measured is a burst's time, each Foo's latency (ms), and the requests
// once they stopped, the harness's own left out.
type measured struct {
	took     time.Duration
	lat      []float64
	requests map[string]float64
}

// bursts measures a burst of new Foos, then one of their updates.
func (r *run) bursts(ctx context.Context, res *Result, p *controlplane.Process, c controller) error {
	r.cfg.Log("N=%d: %s: a burst of %d Foos, then of their updates", r.n, c.name, res.Burst)
	b, err := r.burst(ctx, p, c, "burst-"+c.label, res.Burst, 1)
	if res.BurstSeconds = b.took.Seconds(); err != nil {
		res.Incomplete = "burst: " + err.Error()
		return err
	}
	slices.Sort(b.lat)
	res.P50Ms, res.P99Ms = b.lat[len(b.lat)/2], b.lat[min(len(b.lat)-1, len(b.lat)*99/100)]
	res.perFoo(b.requests)
	u, err := r.burst(ctx, p, c, "burst-"+c.label, res.Burst, 2)
	if res.UpdateSeconds = u.took.Seconds(); err != nil {
		res.Incomplete = "update burst: " + err.Error()
	}
	return err
}

// burst acts at once on n Foos b-<i> of ns: gen 1 creates them (1 replica),
// gen 2 gives them 2. A Foo is done when watches have seen its Deployment
// with gen replicas and its status of generation gen (the classic's tells
// none: it must only be written, and is not waited for after an update).
func (r *run) burst(ctx context.Context, p *controlplane.Process, c controller, ns string, n int, gen int64) (measured, error) {
	if err := r.namespace(ctx, ns); err != nil {
		return measured{}, err
	}
	m := &marks{at: map[string]*[3]time.Time{}}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err := r.watch(wctx, deploymentsGVR, ns, func(u *unstructured.Unstructured) {
		if replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); replicas == gen {
			m.mark(deployed, u.GetName())
		}
	})
	withStatus := c.foos == oursGVR || gen == 1
	if err == nil && withStatus {
		err = r.watch(wctx, c.foos, ns, func(u *unstructured.Unstructured) {
			if written(u, gen) {
				m.mark(statused, u.GetName())
			}
		})
	}
	if err != nil {
		return measured{}, err
	}
	before, err := requestCounts(ctx, r.kube)
	if err != nil {
		return measured{}, err
	}
	foos, first := r.dyn.Resource(c.foos).Namespace(ns), time.Now()
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, gen))
	if err := parallel(n, func(i int) (err error) {
		name := fmt.Sprintf("b-%d", i)
		defer m.mark(acted, name)
		if gen == 1 {
			_, err = r.createFoo(ctx, c.foos, ns, name)
		} else {
			_, err = foos.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		return err
	}); err != nil {
		return measured{}, err
	}
	err = until(ctx, p, 10*time.Millisecond, func(context.Context) bool { return m.reached(n, withStatus) })
	last, lat := m.done(first, withStatus)
	out := measured{took: last.Sub(first), lat: lat}
	if err != nil {
		return out, fmt.Errorf("%d of %d Foos done: %w", len(lat), n, err)
	}
	r.settle(ctx)
	after, err := requestCounts(ctx, r.kube)
	out.requests = delta(before, after)
	out.requests[map[int64]string{1: "POST foos", 2: "PATCH foos"}[gen]] -= float64(n)
	return out, err
}

// The points a Foo of a burst reaches, in marks.
const (
	acted = iota
	deployed
	statused
)

// marks holds when each Foo of a burst first reached each point, and how many did.
type marks struct {
	sync.Mutex
	at map[string]*[3]time.Time
	n  [3]int
}

// mark records that Foo name reached point now, unless it did before.
func (m *marks) mark(point int, name string) {
	now := time.Now()
	m.Lock()
	defer m.Unlock()
	if m.at[name] == nil {
		m.at[name] = &[3]time.Time{}
	}
	if t := m.at[name]; t[point].IsZero() {
		t[point], m.n[point] = now, m.n[point]+1
	}
}

// reached tells whether n Foos were deployed and, if withStatus, had their status written.
func (m *marks) reached(n int, withStatus bool) bool {
	m.Lock()
	defer m.Unlock()
	return m.n[deployed] >= n && (!withStatus || m.n[statused] >= n)
}

// done returns when the last Foo was done (first if none was), and each Foo's latency.
func (m *marks) done(first time.Time, withStatus bool) (time.Time, []float64) {
	m.Lock()
	defer m.Unlock()
	last, lat := first, []float64(nil)
	for _, t := range m.at {
		end := t[deployed]
		if t[statused].After(end) {
			end = t[statused]
		}
		if end.After(last) {
			last = end
		}
		if !t[acted].IsZero() && !t[deployed].IsZero() && (!withStatus || !t[statused].IsZero()) {
			lat = append(lat, ms(end.Sub(t[acted])))
		}
	}
	return last, lat
}

// watch calls seen with each object of g in ns that changes until ctx ends, on
// a connection of its own (not the burst's), resuming if the server ends it.
func (r *run) watch(ctx context.Context, g schema.GroupVersionResource, ns string, seen func(*unstructured.Unstructured)) error {
	wc := rest.CopyConfig(r.cp.RESTConfig)
	wc.Dial = (&net.Dialer{}).DialContext // an uncached transport
	res := dynamic.NewForConfigOrDie(wc).Resource(g).Namespace(ns)
	now, err := res.List(ctx, metav1.ListOptions{Limit: 1}) // any list's resourceVersion is now
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
				seen(u)
			}
		}
	}()
	return nil
}
