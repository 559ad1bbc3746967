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

package receiver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	logtesting "knative.dev/pkg/logging/testing"

	"github.com/frugal-operator/foo-operator/pkg/serverless/handoff"
	"github.com/frugal-operator/foo-operator/pkg/serverless/ownwrites"
	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver/internal/burst"
)

// world is who holds which key, as a fake Spread of each process sees it.
type world struct {
	mu     sync.Mutex
	holder map[string]string // key → process ("": none)
	addr   map[string]string // process → host:port
	// stale, if set for a process and key, is routed to once more
	// before the truth (a view read before the key moved).
	stale map[[2]string]string
	// takenOver is every process's Spread.TakenOver.
	takenOver chan struct{}
	// settled, if set, holds every Settle until it is closed.
	settled chan struct{}
	// entered counts each process's Spread.Enter of each key.
	entered map[[2]string]int
	// resynced counts each process's Spread.Resynced.
	resynced map[string]int
}

func newWorld() *world {
	return &world{holder: map[string]string{}, addr: map[string]string{}, stale: map[[2]string]string{}, takenOver: make(chan struct{}), entered: map[[2]string]int{},
		resynced: map[string]int{}}
}

func (w *world) hold(key, process string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.holder[key] = process
}

// view is one process's Spread.
type view struct {
	w  *world
	me string
}

func (v view) Enter(key string) (func(), bool) {
	v.w.mu.Lock()
	defer v.w.mu.Unlock()
	v.w.entered[[2]string{v.me, key}]++
	return func() {}, v.w.holder[key] == v.me
}

func (w *world) enteredIn(process, key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.entered[[2]string{process, key}]
}

func (v view) Route(key string) (string, bool) {
	v.w.mu.Lock()
	defer v.w.mu.Unlock()
	h := v.w.holder[key]
	if s, ok := v.w.stale[[2]string{v.me, key}]; ok {
		delete(v.w.stale, [2]string{v.me, key})
		h = s
	}
	if h == v.me {
		return "", true
	}
	return v.w.addr[h], false
}

func (v view) Settle(ctx context.Context) bool {
	if v.w.settled != nil {
		select {
		case <-v.w.settled:
		case <-ctx.Done():
		}
	}
	return true
}

func (v view) TakenOver() <-chan struct{} { return v.w.takenOver }

func (v view) Resynced() {
	v.w.mu.Lock()
	defer v.w.mu.Unlock()
	v.w.resynced[v.me]++
}

func (w *world) resyncedIn(process string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resynced[process]
}

// startProcesses starts a Server per name, sharing the keys through w.
func startProcesses(t *testing.T, w *world, opts Options, names ...string) map[string]*testServer {
	t.Helper()
	out := map[string]*testServer{}
	for _, name := range names {
		opts := opts
		opts.Spread = view{w: w, me: name}
		ts := startServer(t, newFakeReconciler(nil), opts, types.NamespacedName{Namespace: "a", Name: "one"},
			types.NamespacedName{Namespace: "a", Name: "two"}, types.NamespacedName{Namespace: "b", Name: "three"})
		w.mu.Lock()
		w.addr[name] = strings.TrimPrefix(ts.url, "http://")
		w.mu.Unlock()
		out[name] = ts
	}
	return out
}

func TestAnEventIsReconciledWhereItsKeyIsHeld(t *testing.T) {
	w := newWorld()
	p := startProcesses(t, w, Options{}, "p0", "p1")
	w.hold("ns/a", "p1")
	if r := send(t, p["p0"].url, fooResourceEvent("update", "ns", "a"), false); r.code != http.StatusOK {
		t.Fatalf("answer = %d %s", r.code, r.body)
	}
	if got0, got1 := p["p0"].rec.callsOf("ns/a"), p["p1"].rec.callsOf("ns/a"); got0 != 0 || got1 != 1 {
		t.Errorf("reconciles of ns/a: %d in p0, %d in p1; want 0 and 1", got0, got1)
	}
}

func TestAPingReconcilesEachKeyOnceWhereItIsHeld(t *testing.T) {
	w := newWorld()
	p := startProcesses(t, w, Options{}, "p0", "p1")
	w.hold("a/one", "p0")
	w.hold("a/two", "p1")
	w.hold("b/three", "p1")
	if r := send(t, p["p0"].url, pingEvent(), false); r.code != http.StatusOK {
		t.Fatalf("answer = %d %s", r.code, r.body)
	}
	for key, where := range map[string]string{"a/one": "p0", "a/two": "p1", "b/three": "p1"} {
		for name, ts := range p {
			want := 0
			if name == where {
				want = 1
			}
			if got := ts.rec.callsOf(key); got != want {
				t.Errorf("%s reconciled %d times in %s, want %d", key, got, name, want)
			}
		}
	}
}

// joiner is the Spread of a process that starts beside others.
type joiner struct{ view }

func (joiner) Settle(context.Context) bool { return false }

// A process that starts beside others reconciles nothing at its cold start,
// and lists only to learn what owners track: with every pod of a scale-up
// listing, N pods would cost N full LISTs.
func TestAJoiningProcessListsOnlyToLearnWhatIsTracked(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tracked   bool
		wantLists int32
	}{{"nothing tracked", false, 0}, {"owners track objects", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := logtesting.TestContextWithLogger(t)
			d, _ := newDecoder()
			if tc.tracked {
				d = trackingDecoder(t)
			}
			var lists atomic.Int32
			s := New(ctx, newFakeReconciler(nil), d, func(context.Context, ...string) ([]types.NamespacedName, []types.NamespacedName, error) {
				lists.Add(1)
				return key("a", "one"), nil, nil
			}, Options{Spread: joiner{view{w: newWorld(), me: "p1"}}})
			s.resyncs.atStart(ctx)
			if got := lists.Load(); got != tc.wantLists {
				t.Errorf("lists at the cold start = %d, want %d", got, tc.wantLists)
			}
			if got := s.impl.WorkQueue().Len(); got != 0 {
				t.Errorf("%d keys enqueued at the cold start, want none", got)
			}
		})
	}
}

func TestAKeyThatMovedIsRoutedAgain(t *testing.T) {
	w := newWorld()
	p := startProcesses(t, w, Options{}, "p0", "p1")
	w.hold("ns/a", "p0")
	// p0 last read that p1 holds it; p1 knows it does not.
	w.stale[[2]string{"p0", "ns/a"}] = "p1"
	if r := send(t, p["p0"].url, fooResourceEvent("update", "ns", "a"), false); r.code != http.StatusOK {
		t.Fatalf("answer = %d %s", r.code, r.body)
	}
	if got0, got1 := p["p0"].rec.callsOf("ns/a"), p["p1"].rec.callsOf("ns/a"); got0 != 1 || got1 != 0 {
		t.Errorf("reconciles of ns/a: %d in p0, %d in p1; want 1 and 0", got0, got1)
	}
}

func TestAKeyNobodyHoldsWaitsForAHolder(t *testing.T) {
	w := newWorld()
	p := startProcesses(t, w, Options{AckDeadline: time.Second}, "p0", "p1")
	r := send(t, p["p0"].url, fooResourceEvent("update", "ns", "a"), false)
	if r.code != http.StatusServiceUnavailable || !strings.Contains(r.body, "1 of 1 keys not reconciled") {
		t.Errorf("with no holder: answer = %d %q, want 503 saying the key was not reconciled", r.code, r.body)
	}
	got := make(chan response, 1)
	go func() { got <- send(t, p["p0"].url, fooResourceEvent("update", "ns", "a"), false) }()
	w.hold("ns/a", "p1")
	if r := <-got; r.code != http.StatusOK || p["p1"].rec.callsOf("ns/a") != 1 {
		t.Errorf("once p1 holds it: answer = %d %q, reconciles in p1 = %d; want 200 and 1", r.code, r.body, p["p1"].rec.callsOf("ns/a"))
	}
}

func TestAFailureWhereTheKeyIsHeldIsAnswered503(t *testing.T) {
	w := newWorld()
	p0 := startProcesses(t, w, Options{}, "p0")["p0"]
	rec := newFakeReconciler(func(context.Context, string) error { return errors.New("failing") })
	opts := Options{MaxFailures: 1, Spread: view{w: w, me: "p1"}}
	p1 := startServer(t, rec, opts)
	w.addr["p1"] = strings.TrimPrefix(p1.url, "http://")
	w.hold("ns/a", "p1")
	r := send(t, p0.url, fooResourceEvent("update", "ns", "a"), false)
	if r.code != http.StatusServiceUnavailable || !strings.Contains(r.body, "reconcile of ns/a failed") {
		t.Errorf("answer = %d %q, want 503 naming the failed reconcile", r.code, r.body)
	}
}

func TestAKeyNotHeldIsNotReconciled(t *testing.T) {
	w := newWorld()
	p := startProcesses(t, w, Options{}, "p0")
	w.hold("ns/a", "elsewhere")
	p["p0"].srv.impl.EnqueueKey(types.NamespacedName{Namespace: "ns", Name: "a"})
	w.hold("ns/b", "p0")
	if r := send(t, p["p0"].url, fooResourceEvent("update", "ns", "b"), false); r.code != http.StatusOK {
		t.Fatalf("answer = %d %s", r.code, r.body)
	}
	if got := p["p0"].rec.callsOf("ns/a"); got != 0 {
		t.Errorf("ns/a, held elsewhere, reconciled %d times here", got)
	}
}

func TestATakeoverResyncsTheKeysTakenOver(t *testing.T) {
	w := newWorld()
	p0 := startProcesses(t, w, Options{}, "p0")["p0"]
	w.hold("a/one", "p0")
	w.hold("a/two", "elsewhere")
	w.takenOver <- struct{}{}
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return p0.rec.callsOf("a/one") == 1, nil })
	if err != nil {
		t.Fatal("a/one, taken over, was not reconciled")
	}
	if got := p0.rec.callsOf("a/two"); got != 0 {
		t.Errorf("a/two, held elsewhere, was reconciled %d times", got)
	}
}

// Buckets taken over one after another, while the process settles, cost
// one list: the signals of those taken meanwhile are covered by it.
func TestTakeoversWhileSettlingAreResyncedByOneList(t *testing.T) {
	w := newWorld()
	w.takenOver, w.settled = make(chan struct{}, 1), make(chan struct{}) // as package buckets signals
	var lists atomic.Int32
	p0 := startServerListing(t, newFakeReconciler(nil), Options{Spread: view{w: w, me: "p0"}},
		func(context.Context, ...string) ([]types.NamespacedName, []types.NamespacedName, error) {
			lists.Add(1)
			return []types.NamespacedName{{Namespace: "a", Name: "one"}, {Namespace: "a", Name: "two"}}, nil, nil
		})
	w.hold("a/one", "p0")
	w.takenOver <- struct{}{} // taken first: the resync waits for the process to settle
	w.hold("a/two", "p0")
	w.takenOver <- struct{}{} // taken meanwhile
	close(w.settled)
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return p0.rec.callsOf("a/one") > 0 && p0.rec.callsOf("a/two") > 0, nil
	})
	if err != nil {
		t.Fatal("the keys taken over were not reconciled")
	}
	// One list for both takeovers: a list for the second signal would
	// follow the first within milliseconds.
	_ = wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 300*time.Millisecond, true,
		func(context.Context) (bool, error) { return lists.Load() > 1, nil })
	if got := lists.Load(); got != 1 {
		t.Errorf("%d lists, want 1 for both takeovers", got)
	}
	// Once reconciled, the resync of each signal is done; and the start
	// owes none without ColdStartResync.
	err = wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return w.resyncedIn("p0") == 3, nil
	})
	if err != nil {
		t.Errorf("Resynced %d times, want 3: one per TakenOver signal, one for the start", w.resyncedIn("p0"))
	}
}

// A process that starts alone reconciles the keys it holds, and then says
// that it has resynced: the keys it hands on before, another process that
// starts resyncs (package buckets).
func TestAColdStartAloneReconcilesWhatItHoldsThenSaysResynced(t *testing.T) {
	w := newWorld()
	one, two := types.NamespacedName{Namespace: "a", Name: "one"}, types.NamespacedName{Namespace: "a", Name: "two"}
	w.hold(one.String(), "p0")
	w.hold(two.String(), "p1")
	release := make(chan struct{})
	rec := newFakeReconciler(func(context.Context, string) error { <-release; return nil })
	p0 := startServerListing(t, rec, Options{Spread: view{w: w, me: "p0"}, ColdStartResync: true},
		func(context.Context, ...string) ([]types.NamespacedName, []types.NamespacedName, error) {
			return []types.NamespacedName{one, two}, nil, nil
		})
	if got := <-rec.started; got != one.String() {
		t.Fatalf("the cold start reconciles %s first, want %s", got, one)
	}
	if got := w.resyncedIn("p0"); got != 0 {
		t.Errorf("Resynced %d times while %s is being reconciled, want 0", got, one)
	}
	close(release)
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return w.resyncedIn("p0") > 0, nil
	})
	if err != nil {
		t.Fatal("never said resynced")
	}
	if got := p0.rec.callsOf(one.String()); got != 1 {
		t.Errorf("said resynced with %s reconciled %d times, want 1", one, got)
	}
	if got := w.enteredIn("p0", two.String()); got != 0 {
		t.Errorf("%s, held elsewhere, was tried here %d times", two, got)
	}
	if got := w.resyncedIn("p0"); got != 1 {
		t.Errorf("Resynced %d times, want 1", got)
	}
}

// A burst's resync reconciles, and waits for, the keys this process holds:
// a key held elsewhere, skipped here, would end the wait at once, and the
// next burst would list everything again.
func TestABurstIsResyncedOnceWhereItsKeyIsHeld(t *testing.T) {
	for name, sentTo := range map[string][]string{
		"each process is sent a burst": {"p0", "p1"},
		// p1 hands the burst it counts to p0, which holds its key.
		"only another process is sent it": {"p1"},
	} {
		t.Run(name, func(t *testing.T) { burstResyncedOnce(t, sentTo) })
	}
}

// burstResyncedOnce sends a burst of creations to each process of sentTo
// (p0, p1), of keys it holds, and checks that p0, which holds the burst's
// key, resyncs it once, reconciling each listed key where it is held.
func burstResyncedOnce(t *testing.T, sentTo []string) {
	w := newWorld()
	here, elsewhere := types.NamespacedName{Namespace: "ns", Name: "here"}, types.NamespacedName{Namespace: "ns", Name: "elsewhere"}
	w.hold(burstResyncKey([]string{"ns"}), "p0")
	w.hold(here.String(), "p0")
	w.hold(elsewhere.String(), "p1")
	release := make(chan struct{})
	recs := map[string]*fakeReconciler{
		"p0": newFakeReconciler(func(ctx context.Context, key string) error {
			if key == here.String() {
				<-release
			}
			return nil
		}),
		"p1": newFakeReconciler(nil),
	}
	lists := map[string]*atomic.Int32{} // the bursts' LISTs of each process
	procs := map[string]*testServer{}
	for _, name := range []string{"p0", "p1"} {
		n := &atomic.Int32{}
		lists[name] = n
		procs[name] = startServerListing(t, recs[name], Options{Spread: view{w: w, me: name}},
			func(_ context.Context, namespaces ...string) ([]types.NamespacedName, []types.NamespacedName, error) {
				if len(namespaces) == 0 { // the cold start's: each process held every key then
					return nil, nil, nil
				}
				n.Add(1)
				return []types.NamespacedName{elsewhere, here}, nil, nil
			})
		w.mu.Lock()
		w.addr[name] = strings.TrimPrefix(procs[name].url, "http://")
		w.mu.Unlock()
	}
	for _, name := range sentTo {
		for i := range burst.Owners {
			key := fmt.Sprint(name, "-k", i)
			w.hold("ns/"+key, name)
			if r := send(t, procs[name].url, fooResourceEvent("add", "ns", key), false); r.code != http.StatusOK {
				t.Fatalf("creation %d in %s answered %d, want 200", i, name, r.code)
			}
		}
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return recs["p0"].callsOf(here.String()) > 0 && recs["p1"].callsOf(elsewhere.String()) > 0, nil
	}); err != nil {
		t.Fatalf("the burst's resync reconciled %s in p0 %d times and %s in p1 %d times; want each at least once",
			here, recs["p0"].callsOf(here.String()), elsewhere, recs["p1"].callsOf(elsewhere.String()))
	}
	if !procs["p0"].srv.resyncs.counter.Running() {
		t.Error("the burst's resync ended before the key held here was reconciled")
	}
	close(release)
	for name, ts := range procs {
		if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return !ts.srv.resyncs.counter.Running(), nil
		}); err != nil {
			t.Fatalf("the burst in %s did not end", name)
		}
	}
	for name, want := range map[string]int32{"p0": 1, "p1": 0} {
		if n := lists[name].Load(); n != want {
			t.Errorf("%s listed for the burst %d times, want %d", name, n, want)
		}
	}
	if n := w.enteredIn("p0", elsewhere.String()); n != 0 {
		t.Errorf("p0 tried %s, held in p1, %d times; want 0", elsewhere, n)
	}
}

// What an event hands off (Decoder.Handoff) is taken only by a reconcile
// that no later event about its key asked for elsewhere: kept in a process
// that did not hold the key, or kept while another process was sent an
// event about it, it may be stale when this process reconciles the key.
func TestAHandOffIsNotTakenAfterAnEventElsewhere(t *testing.T) {
	k := types.NamespacedName{Namespace: "ns", Name: "a"}
	for name, tc := range map[string]struct {
		heldFirst string // where k is held when its add arrives at p0
		kept      bool   // p0 keeps an object for k as an add not yet reconciled would
	}{
		"handed off where the key was not held": {heldFirst: "p1"},
		"an event about the key came elsewhere": {heldFirst: "p0", kept: true},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld()
			w.hold(k.String(), tc.heldFirst)
			stores, took, procs := map[string]*handoff.Store{}, map[string]*atomic.Int32{}, map[string]*testServer{}
			for _, name := range []string{"p0", "p1"} {
				store, n := handoff.New(0), &atomic.Int32{}
				stores[name], took[name] = store, n
				rec := newFakeReconciler(func(_ context.Context, key string) error {
					if key != k.String() {
						return nil
					}
					if _, ok := store.Take(k); ok {
						n.Add(1)
					}
					return nil
				})
				procs[name] = startServer(t, rec, Options{Spread: view{w: w, me: name}, Verifier: admit{inOrder: true}})
				procs[name].srv.decoder.Handoff = store
				w.mu.Lock()
				w.addr[name] = strings.TrimPrefix(procs[name].url, "http://")
				w.mu.Unlock()
			}
			if tc.kept {
				stores["p0"].Put(k, []byte(`{"stale":true}`))
			} else if r := send(t, procs["p0"].url, fooResourceEvent("add", k.Namespace, k.Name), false); r.code != http.StatusOK {
				t.Fatalf("the add answered %d %s, want 200", r.code, r.body)
			}
			w.hold(k.String(), "p0")
			if r := send(t, procs["p1"].url, fooResourceEvent("update", k.Namespace, k.Name), false); r.code != http.StatusOK {
				t.Fatalf("the update answered %d %s, want 200", r.code, r.body)
			}
			if n := procs["p0"].rec.callsOf(k.String()); n == 0 {
				t.Fatalf("%s was not reconciled in p0, which holds it", k)
			}
			if n := took["p0"].Load(); n != 0 {
				t.Errorf("a reconcile of %s in p0 after the update was handed the object kept before it (%d times)", k, n)
			}
		})
	}
}

// An event of an object that the holder of its owner's key wrote (the
// owner's status, or an owned object) reconciles nothing, whichever process
// it reaches, as with one process: the one it reaches does not know the
// write, the holder does.
func TestAnEventOfTheHoldersOwnWriteReconcilesNothing(t *testing.T) {
	for name, tc := range map[string]struct {
		gk    schema.GroupKind
		name  string
		event func(rv string) cloudevents.Event
	}{
		"an owned Deployment": {deploymentKind, "web", func(rv string) cloudevents.Event {
			return adapterEvent("resource", "update", "apps/v1", "Deployment", "deployments", "ns", "web", map[string]any{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "web", "namespace": "ns", "uid": "d-web", "resourceVersion": rv,
					"ownerReferences": []any{map[string]any{"apiVersion": fooAPIVersion, "kind": "Foo", "name": "a", "uid": "u-a", "controller": true}}},
			})
		}},
		"the Foo's status, not Ready yet": {fooKind, "a", func(rv string) cloudevents.Event {
			return adapterEvent("resource", "update", fooAPIVersion, "Foo", "foos", "ns", "a", map[string]any{
				"apiVersion": fooAPIVersion, "kind": "Foo",
				"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "u-a", "generation": 1, "resourceVersion": rv},
				"status":   map[string]any{"observedGeneration": 1},
			})
		}},
		// An add that comes after the holder wrote the Foo (a burst's
		// resync reconciled it first) tells it nothing: rv is ignored.
		"the Foo's add, written since": {fooKind, "a", func(rv string) cloudevents.Event {
			if rv == "7" {
				return fooResourceEvent("add", "ns", "a")
			}
			return fooResourceEvent("update", "ns", "a") // a new spec
		}},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld()
			p := startProcesses(t, w, Options{}, "p0", "p1")
			for _, ts := range p {
				ts.srv.decoder.OwnWrites = ownwrites.New(0)
			}
			w.hold("ns/a", "p0")
			p["p0"].srv.decoder.OwnWrites.Wrote(tc.gk, "ns", tc.name, "7", types.UID("u-"+tc.name))
			for _, rv := range []string{"7", "8"} { // p0's write, then another's
				if r := send(t, p["p1"].url, tc.event(rv), false); r.code != http.StatusOK {
					t.Fatalf("the event at resourceVersion %s answered %d %s, want 200", rv, r.code, r.body)
				}
			}
			if got0, got1 := p["p0"].rec.callsOf("ns/a"), p["p1"].rec.callsOf("ns/a"); got0 != 1 || got1 != 0 {
				t.Errorf("reconciles of ns/a: %d in p0, %d in p1; want 1 (for another's write) and 0", got0, got1)
			}
		})
	}
}

func TestBadKeysAreRefused(t *testing.T) {
	w := newWorld()
	spread := startProcesses(t, w, Options{}, "p0")["p0"]
	alone := startServer(t, newFakeReconciler(nil), Options{})
	for _, tc := range []struct {
		name, url, body string
		want            int
	}{
		{"not JSON", spread.url, "keys", http.StatusBadRequest},
		{"no name", spread.url, `{"keys":["ns/"]}`, http.StatusBadRequest},
		{"no slash", spread.url, `{"keys":["ns"]}`, http.StatusBadRequest},
		{"not shared", alone.url, `{"keys":["ns/a"]}`, http.StatusNotFound},
	} {
		r := post(t, tc.url+KeysPath, http.Header{"Content-Type": {"application/json"}}, strings.NewReader(tc.body))
		if r.code != tc.want {
			t.Errorf("%s: answer = %d %q, want %d", tc.name, r.code, r.body, tc.want)
		}
	}
	resp, err := http.Get(spread.url + KeysPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET answer = %d, want 405", resp.StatusCode)
	}
}
