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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"knative.dev/pkg/controller"
	logtesting "knative.dev/pkg/logging/testing"
	pkgreconciler "knative.dev/pkg/reconciler"

	"github.com/frugal-operator/foo-operator/pkg/serverless/handoff"
	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver/internal/burst"
)

// fakeReconciler behaves like the generated reconciler where it matters
// here: it skips every key until promoted, and Promote enqueues the keys it
// was given. It records calls and overlapping reconciles of one key.
type fakeReconciler struct {
	fn          func(ctx context.Context, key string) error
	promoteKeys []types.NamespacedName

	promoted atomic.Bool
	mu       sync.Mutex
	calls    map[string]int
	active   map[string]int
	overlaps int
	started  chan string
}

func newFakeReconciler(fn func(context.Context, string) error) *fakeReconciler {
	return &fakeReconciler{fn: fn, calls: map[string]int{}, active: map[string]int{}, started: make(chan string, 1000)}
}

func (r *fakeReconciler) Reconcile(ctx context.Context, key string) error {
	if !r.promoted.Load() {
		return controller.NewSkipKey(key)
	}
	r.mu.Lock()
	r.calls[key]++
	r.active[key]++
	if r.active[key] > 1 {
		r.overlaps++
	}
	r.mu.Unlock()
	r.started <- key
	var err error
	if r.fn != nil {
		err = r.fn(ctx, key)
	}
	r.mu.Lock()
	r.active[key]--
	r.mu.Unlock()
	return err
}

func (r *fakeReconciler) Promote(b pkgreconciler.Bucket, enq func(pkgreconciler.Bucket, types.NamespacedName)) error {
	r.promoted.Store(true)
	if enq == nil { // as the generated reconciler: promoted, nothing enqueued
		return nil
	}
	for _, k := range r.promoteKeys {
		enq(b, k)
	}
	return nil
}

func (r *fakeReconciler) Demote(pkgreconciler.Bucket) { r.promoted.Store(false) }

func (r *fakeReconciler) callsOf(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[key]
}

type testServer struct {
	url  string
	stop context.CancelFunc
	done chan error
	rec  *fakeReconciler
	srv  *Server
	// enqueues counts the events whose keys were enqueued.
	enqueues atomic.Int32
}

// startServer runs a Server on a loopback port around rec, whose resyncs
// reconcile the given keys, until the test ends.
func startServer(t *testing.T, rec *fakeReconciler, opts Options, resync ...types.NamespacedName) *testServer {
	t.Helper()
	return startServerListing(t, rec, opts, func(context.Context, ...string) ([]types.NamespacedName, []types.NamespacedName, error) {
		return resync, nil, nil
	})
}

// startServerListing is startServer with lister as the resync's.
func startServerListing(t *testing.T, rec *fakeReconciler, opts Options, lister KeyLister) *testServer {
	t.Helper()
	ctx, cancel := context.WithCancel(logtesting.TestContextWithLogger(t))
	d, _ := newDecoder(ownedDeployment("ns", "web", "a"))
	if opts.Address == "" {
		opts.Address = "127.0.0.1:0"
	}
	srv := New(ctx, rec, d, lister, opts)
	addr := make(chan net.Addr, 1)
	ts := &testServer{stop: cancel, done: make(chan error, 1), rec: rec, srv: srv}
	srv.enqueued = func() { ts.enqueues.Add(1) }
	go func() { ts.done <- srv.Run(ctx, func(a net.Addr) { addr <- a }) }()
	select {
	case a := <-addr:
		ts.url = "http://" + a.String()
	case err := <-ts.done:
		t.Fatal("Run() =", err)
	}
	t.Cleanup(func() {
		// The senders are done: their idle connections go first, or the
		// drain would wait for them to stay idle for its grace.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		cancel()
		if err := <-ts.done; err != nil {
			t.Error("Run() =", err)
		}
	})
	return ts
}

type response struct {
	code int
	body string
}

// send delivers an event with a real CloudEvents client, in binary mode or,
// when structured, in structured mode, and returns the HTTP status.
func send(t *testing.T, url string, e cloudevents.Event, structured bool) response {
	t.Helper()
	c, err := cloudevents.NewClientHTTP()
	if err != nil {
		t.Fatal(err)
	}
	ctx := cloudevents.ContextWithTarget(context.Background(), url)
	if structured {
		ctx = binding.WithForceStructured(ctx)
	}
	res := c.Send(ctx, e)
	var hr *cehttp.Result
	if !cloudevents.ResultAs(res, &hr) {
		t.Fatalf("Send() = %v, want an HTTP result", res)
	}
	msg := ""
	if len(hr.Args) > 0 {
		msg = fmt.Sprint(hr.Args...)
	}
	return response{code: hr.StatusCode, body: msg}
}

func post(t *testing.T, url string, header http.Header, body io.Reader) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, body: string(b)}
}

func TestEventIsAnsweredAfterItsReconcile(t *testing.T) {
	tests := []struct {
		name  string
		event cloudevents.Event
		key   string
	}{
		{"foo resource add", fooResourceEvent("add", "ns", "a"), "ns/a"},
		{"foo resource update", fooResourceEvent("update", "ns", "a"), "ns/a"},
		{"foo resource delete", fooResourceEvent("delete", "ns", "a"), "ns/a"},
		{"foo ref add", refEvent("add", fooAPIVersion, "Foo", "foos", "ns", "a"), "ns/a"},
		{"foo ref delete", refEvent("delete", fooAPIVersion, "Foo", "foos", "ns", "a"), "ns/a"},
		{"owned deployment resource update", deploymentResourceEvent("update", "ns", "web", "a"), "ns/a"},
		{"owned deployment resource delete", deploymentResourceEvent("delete", "ns", "gone", "a"), "ns/a"},
		{"owned deployment ref update", refEvent("update", "apps/v1", "Deployment", "deployments", "ns", "web"), "ns/a"},
	}
	for _, tc := range tests {
		for _, structured := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s structured=%v", tc.name, structured), func(t *testing.T) {
				release := make(chan struct{})
				var finished atomic.Bool
				rec := newFakeReconciler(func(_ context.Context, key string) error {
					<-release
					finished.Store(true)
					return nil
				})
				ts := startServer(t, rec, Options{})

				got := make(chan response, 1)
				go func() { got <- send(t, ts.url, tc.event, structured) }()
				if key := <-rec.started; key != tc.key {
					t.Errorf("reconciled %q, want %q", key, tc.key)
				}
				select {
				case r := <-got:
					t.Fatalf("answered %d before the reconcile finished", r.code)
				case <-time.After(50 * time.Millisecond):
				}
				close(release)
				r := <-got
				if r.code != http.StatusOK || !finished.Load() {
					t.Errorf("answer = %d (finished=%v), want 200 after the reconcile", r.code, finished.Load())
				}
			})
		}
	}
}

func TestAnswers(t *testing.T) {
	fooEvent := fooResourceEvent("add", "ns", "a")
	fooBinary, fooStructured := http.Header{}, http.Header{}
	for k, v := range map[string]string{"Ce-Specversion": "1.0", "Ce-Type": "dev.knative.apiserver.resource.add",
		"Ce-Source": apiServerURL, "Ce-Id": "1", "Content-Type": "application/json"} {
		fooBinary.Set(k, v)
	}
	fooStructured.Set("Content-Type", "application/cloudevents+json")
	structuredBody, _ := fooEvent.MarshalJSON()
	big := bytes.Repeat([]byte("x"), 2<<20)

	errTransient := errors.New("etcd is down")
	tests := []struct {
		name      string
		send      func(t *testing.T, url string) response
		reconcile func(context.Context, string) error
		opts      Options
		want      int
		wantBody  string
		wantCalls int // reconciles of ns/a
	}{{
		name:      "reconciled",
		send:      func(t *testing.T, url string) response { return send(t, url, fooEvent, false) },
		want:      http.StatusOK,
		wantCalls: 1,
	}, {
		name:      "permanent error is an answer: the status carries it",
		send:      func(t *testing.T, url string) response { return send(t, url, fooEvent, false) },
		reconcile: func(context.Context, string) error { return controller.NewPermanentError(errors.New("not owned")) },
		want:      http.StatusOK,
		wantCalls: 1,
	}, {
		name:      "transient error retried in the pod, then 503",
		send:      func(t *testing.T, url string) response { return send(t, url, fooEvent, false) },
		reconcile: func(context.Context, string) error { return errTransient },
		want:      http.StatusServiceUnavailable,
		wantBody:  "etcd is down",
		wantCalls: DefaultMaxFailures,
	}, {
		name: "transient error then success",
		send: func(t *testing.T, url string) response { return send(t, url, fooEvent, false) },
		reconcile: func() func(context.Context, string) error {
			var n atomic.Int32
			return func(context.Context, string) error {
				if n.Add(1) < 3 {
					return errTransient
				}
				return nil
			}
		}(),
		want:      http.StatusOK,
		wantCalls: 3,
	}, {
		name:      "deadline",
		send:      func(t *testing.T, url string) response { return send(t, url, fooEvent, false) },
		reconcile: func(ctx context.Context, _ string) error { time.Sleep(300 * time.Millisecond); return nil },
		opts:      Options{AckDeadline: 50 * time.Millisecond},
		want:      http.StatusServiceUnavailable,
		wantBody:  "1 of 1 keys not reconciled within 50ms",
		wantCalls: 1,
	}, {
		name: "other event type is ignored",
		send: func(t *testing.T, url string) response {
			e := pingEvent()
			e.SetType("com.example.other")
			return send(t, url, e, false)
		},
		want: http.StatusAccepted,
	}, {
		name: "other kind is ignored",
		send: func(t *testing.T, url string) response {
			return send(t, url, refEvent("add", "v1", "ConfigMap", "configmaps", "ns", "a"), true)
		},
		want: http.StatusAccepted,
	}, {
		name: "deployment without a Foo controller is ignored",
		send: func(t *testing.T, url string) response {
			return send(t, url, deploymentResourceEvent("update", "ns", "web", ""), false)
		},
		want: http.StatusAccepted,
	}, {
		name: "not a CloudEvent",
		send: func(t *testing.T, url string) response {
			return post(t, url, http.Header{"Content-Type": {"application/json"}}, strings.NewReader("{}"))
		},
		want:     http.StatusBadRequest,
		wantBody: "not a CloudEvent",
	}, {
		name: "structured mode, malformed JSON",
		send: func(t *testing.T, url string) response {
			return post(t, url, fooStructured, strings.NewReader(`{"specversion":"1.0",`))
		},
		want:     http.StatusBadRequest,
		wantBody: "malformed CloudEvent",
	}, {
		name: "structured mode, well-formed",
		send: func(t *testing.T, url string) response {
			return post(t, url, fooStructured, bytes.NewReader(structuredBody))
		},
		want:      http.StatusOK,
		wantCalls: 1,
	}, {
		name: "binary mode, missing attributes",
		send: func(t *testing.T, url string) response {
			h := fooBinary.Clone()
			h.Del("Ce-Source")
			return post(t, url, h, strings.NewReader(`{}`))
		},
		want:     http.StatusBadRequest,
		wantBody: "source",
	}, {
		name: "binary mode, data not JSON",
		send: func(t *testing.T, url string) response {
			return post(t, url, fooBinary, strings.NewReader(`<foo/>`))
		},
		want:     http.StatusBadRequest,
		wantBody: "not the JSON expected",
	}, {
		name: "missing name",
		send: func(t *testing.T, url string) response {
			return post(t, url, fooBinary, strings.NewReader(`{"apiVersion":"samplecontroller.knative.io/v1alpha1","kind":"Foo","metadata":{"namespace":"ns"}}`))
		},
		want:     http.StatusBadRequest,
		wantBody: "event data has no metadata.name",
	}, {
		name:     "body over the cap",
		send:     func(t *testing.T, url string) response { return post(t, url, fooBinary, bytes.NewReader(big)) },
		want:     http.StatusRequestEntityTooLarge,
		wantBody: "over the limit",
	}, {
		name: "chunked body over the cap",
		send: func(t *testing.T, url string) response {
			// A reader of unknown length makes the client send it chunked.
			return post(t, url, fooBinary, io.MultiReader(bytes.NewReader(big)))
		},
		want:     http.StatusRequestEntityTooLarge,
		wantBody: "over the limit",
	}, {
		name: "not a POST",
		send: func(t *testing.T, url string) response {
			resp, err := http.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return response{code: resp.StatusCode}
		},
		want: http.StatusMethodNotAllowed,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newFakeReconciler(tc.reconcile)
			ts := startServer(t, rec, tc.opts)
			got := tc.send(t, ts.url)
			if got.code != tc.want || !strings.Contains(got.body, tc.wantBody) {
				t.Errorf("answer = %d %q, want %d containing %q", got.code, got.body, tc.want, tc.wantBody)
			}
			if strings.Count(strings.TrimSpace(got.body), "\n") > 0 {
				t.Errorf("answer body %q is more than one line", got.body)
			}
			if got := rec.callsOf("ns/a"); got != tc.wantCalls {
				t.Errorf("reconciles of ns/a = %d, want %d", got, tc.wantCalls)
			}
		})
	}
}

// A key that keeps failing does not hold its events for the workqueue's
// growing backoff: once it has failed MaxFailures times in a row, an event
// for it is answered after one more try (a direct adapter sends nothing else
// meanwhile). A success starts the count again.
func TestAKeyThatKeepsFailingIsAnsweredAfterOneTry(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	rec := newFakeReconciler(func(context.Context, string) error {
		if failing.Load() {
			return errors.New("quota exceeded")
		}
		return nil
	})
	ts := startServer(t, rec, Options{})
	event := fooResourceEvent("update", "ns", "a")
	answer := func(want int) int {
		t.Helper()
		before := rec.callsOf("ns/a")
		if got := send(t, ts.url, event, false); got.code != want {
			t.Fatalf("answer = %d %q, want %d", got.code, got.body, want)
		}
		return rec.callsOf("ns/a") - before
	}
	if n := answer(http.StatusServiceUnavailable); n != DefaultMaxFailures {
		t.Errorf("first event answered after %d reconciles, want %d", n, DefaultMaxFailures)
	}
	// One more try, and perhaps one of the workqueue's retries.
	if n := answer(http.StatusServiceUnavailable); n > 2 {
		t.Errorf("second event answered after %d reconciles, want one more try", n)
	}
	failing.Store(false)
	answer(http.StatusOK)
	failing.Store(true)
	if n := answer(http.StatusServiceUnavailable); n < DefaultMaxFailures {
		t.Errorf("after a success, an event answered after %d reconciles, want %d", n, DefaultMaxFailures)
	}
}

// TestSuccessAnswersWithAnEmptyBody: a broker turns a 2xx with a body that
// is not a CloudEvent into a 502.
func TestSuccessAnswersWithAnEmptyBody(t *testing.T) {
	ts := startServer(t, newFakeReconciler(nil), Options{})
	for name, e := range map[string]cloudevents.Event{
		"reconciled": fooResourceEvent("add", "ns", "a"),
		"ignored":    refEvent("add", "v1", "ConfigMap", "configmaps", "ns", "a"),
	} {
		body, _ := e.MarshalJSON()
		got := post(t, ts.url, http.Header{"Content-Type": {"application/cloudevents+json"}}, bytes.NewReader(body))
		if got.code/100 != 2 || got.body != "" {
			t.Errorf("%s: answer = %d %q, want 2xx with an empty body", name, got.code, got.body)
		}
	}
}

func TestEventsForOneKeyShareAReconcile(t *testing.T) {
	release := make(chan struct{})
	rec := newFakeReconciler(func(context.Context, string) error { <-release; return nil })
	ts := startServer(t, rec, Options{})

	first := make(chan response, 1)
	go func() { first <- send(t, ts.url, fooResourceEvent("update", "ns", "a"), false) }()
	<-rec.started // the first reconcile runs, and blocks

	// These arrive during the first reconcile: it started before them, so they
	// must wait for a second one, which they share.
	const later = 5
	answers := make(chan response, later)
	for range later {
		go func() { answers <- send(t, ts.url, fooResourceEvent("update", "ns", "a"), false) }()
	}
	// Release the first reconcile only once every later event has enqueued
	// its key (after starting to watch it): an enqueue that landed after the
	// second reconcile began would ask for a third.
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true,
		func(context.Context) (bool, error) { return ts.enqueues.Load() == later+1, nil }); err != nil {
		t.Fatalf("the later events never enqueued: %v", err)
	}
	if got := ts.watching("ns/a"); got != later+1 {
		t.Fatalf("%d events watch ns/a, want %d", got, later+1)
	}
	close(release)
	if r := <-first; r.code != http.StatusOK {
		t.Errorf("first answer = %d", r.code)
	}
	for range later {
		if r := <-answers; r.code != http.StatusOK {
			t.Errorf("later answer = %d", r.code)
		}
	}
	if got := rec.callsOf("ns/a"); got != 2 {
		t.Errorf("reconciles = %d, want 2 (one before the later events, one shared by them)", got)
	}
	if rec.overlaps != 0 {
		t.Errorf("%d reconciles of one key overlapped", rec.overlaps)
	}
}

func TestOneKeyIsNeverReconciledTwiceAtOnce(t *testing.T) {
	rec := newFakeReconciler(func(context.Context, string) error { time.Sleep(time.Millisecond); return nil })
	ts := startServer(t, rec, Options{Workers: 8})
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := fooResourceEvent("update", "ns", fmt.Sprint("k", i%3))
			if i%2 == 0 {
				e = deploymentResourceEvent("update", "ns", "web", fmt.Sprint("k", i%3))
			}
			if r := send(t, ts.url, e, i%4 == 0); r.code != http.StatusOK {
				bad.Add(1)
			}
		}()
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Errorf("%d events were not answered 200", bad.Load())
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.overlaps != 0 {
		t.Errorf("%d reconciles of one key overlapped", rec.overlaps)
	}
}

// A serverless reconciler reads what an informer's cache would have told
// it, so each reconcile waits on a few requests: by default 32 keys are
// reconciled at once, for the events a broker delivers in parallel and
// those answered once enqueued (docs/performance.md).
func TestByDefault32KeysAreReconciledAtOnce(t *testing.T) {
	const want = 32
	var running atomic.Int32
	all := make(chan struct{})
	rec := newFakeReconciler(func(ctx context.Context, _ string) error {
		if running.Add(1) == want {
			close(all)
		}
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	ts := startServer(t, rec, Options{AckDeadline: 5 * time.Second})
	codes := make(chan int, want)
	for i := range want {
		go func() { codes <- send(t, ts.url, fooResourceEvent("add", "ns", fmt.Sprint("k", i)), false).code }()
	}
	for range want {
		if code := <-codes; code != http.StatusOK {
			t.Fatalf("an event was answered %d, want 200: %d keys were reconciled at once, want %d", code, running.Load(), want)
		}
	}
}

// burst.Owners creations in a row (events of owners' adds, each answered
// after its reconcile, as a direct adapter sends them) start a resync: the
// owners it lists are reconciled with no event of theirs.
func TestABurstOfCreationsStartsAResync(t *testing.T) {
	listed := types.NamespacedName{Namespace: "ns", Name: "listed"}
	rec := newFakeReconciler(nil)
	ts := startServer(t, rec, Options{}, listed)
	for i := range burst.Owners {
		if r := send(t, ts.url, fooResourceEvent("add", "ns", fmt.Sprint("k", i)), false); r.code != http.StatusOK {
			t.Fatalf("creation %d answered %d, want 200", i, r.code)
		}
	}
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return rec.callsOf(listed.String()) > 0, nil
	})
	if err != nil {
		t.Errorf("%s, which only the resync lists, was not reconciled after %d creations", listed, burst.Owners)
	}
}

// A burst's resync lists the namespaces of its creations only, or every
// namespace if they are more than burst.Namespaces.
func TestABurstsResyncListsItsNamespaces(t *testing.T) {
	many := make([]string, burst.Namespaces+1)
	for i := range many {
		many[i] = fmt.Sprint("ns-", i)
	}
	for _, tc := range []struct {
		name       string
		namespaces []string // of the creations, in turn
		want       []string
	}{
		{name: "one namespace", namespaces: []string{"ns"}, want: []string{"ns"}},
		{name: "two", namespaces: []string{"b", "a"}, want: []string{"a", "b"}},
		{name: "more than burst.Namespaces: every namespace", namespaces: many, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			listed := make(chan []string, 1)
			ts := startServerListing(t, newFakeReconciler(nil), Options{}, func(_ context.Context, namespaces ...string) ([]types.NamespacedName, []types.NamespacedName, error) {
				listed <- namespaces
				return nil, nil, nil
			})
			for i := range max(burst.Owners, len(tc.namespaces)) {
				ns := tc.namespaces[i%len(tc.namespaces)]
				if r := send(t, ts.url, fooResourceEvent("add", ns, fmt.Sprint("k", i)), false); r.code != http.StatusOK {
					t.Fatalf("creation %d answered %d, want 200", i, r.code)
				}
			}
			select {
			case got := <-listed:
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Error("namespaces of the burst's resync (-want +got):", diff)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no resync after a burst")
			}
		})
	}
}

// A burst's resync is running until the keys it listed are reconciled: a
// resync before then would list them again.
func TestABurstsResyncLastsUntilItsKeysAreReconciled(t *testing.T) {
	listed := types.NamespacedName{Namespace: "ns", Name: "listed"}
	release := make(chan struct{})
	rec := newFakeReconciler(func(ctx context.Context, key string) error {
		if key == listed.String() {
			<-release
		}
		return nil
	})
	var lists atomic.Int32
	ts := startServerListing(t, rec, Options{}, func(context.Context, ...string) ([]types.NamespacedName, []types.NamespacedName, error) {
		lists.Add(1)
		return []types.NamespacedName{listed}, nil, nil
	})
	running := func() bool {
		return ts.srv.resyncs.counter.Running()
	}
	for i := range burst.Owners {
		if r := send(t, ts.url, fooResourceEvent("add", "ns", fmt.Sprint("k", i)), false); r.code != http.StatusOK {
			t.Fatalf("creation %d answered %d, want 200", i, r.code)
		}
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return rec.callsOf(listed.String()) > 0, nil
	}); err != nil {
		t.Fatal("the burst's resync did not reconcile what it listed")
	}
	if !running() {
		t.Error("the burst's resync ended while what it listed was being reconciled")
	}
	close(release)
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return !running(), nil
	}); err != nil {
		t.Error("the burst's resync did not end once what it listed was reconciled")
	}
	if got := lists.Load(); got != 1 {
		t.Errorf("%d lists, want 1", got)
	}
}

// Answered once enqueued, creations fill the queue at once: they are not
// even counted.
func TestCreationsAnsweredOnceEnqueuedStartNoResync(t *testing.T) {
	rec := newFakeReconciler(nil)
	ts := startServer(t, rec, Options{AckOnEnqueue: true})
	for i := range 2 * burst.Owners {
		if r := send(t, ts.url, fooResourceEvent("add", "ns", fmt.Sprint("k", i)), false); r.code != http.StatusAccepted {
			t.Fatalf("creation %d answered %d, want 202", i, r.code)
		}
	}
	if c := &ts.srv.resyncs.counter; c.Counted() != 0 || c.Running() {
		t.Errorf("%d creations counted (a resync running: %v), want none", c.Counted(), c.Running())
	}
}

// burst.Owners changes in a row (updates to a new generation, as kubectl
// apply of many owners sends them) start a resync too.
func TestABurstOfChangesStartsAResync(t *testing.T) {
	listed := types.NamespacedName{Namespace: "ns", Name: "listed"}
	rec := newFakeReconciler(nil)
	ts := startServer(t, rec, Options{}, listed)
	for i := range burst.Owners {
		e := withReady(fooResourceEvent("update", "ns", fmt.Sprint("k", i)), 2, 1, "True", "")
		if r := send(t, ts.url, e, false); r.code != http.StatusOK {
			t.Fatalf("change %d answered %d, want 200", i, r.code)
		}
	}
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return rec.callsOf(listed.String()) > 0, nil
	})
	if err != nil {
		t.Errorf("%s, which only the resync lists, was not reconciled after %d changes", listed, burst.Owners)
	}
}

// Fewer creations, or updates of a generation already reconciled, start
// none.
func TestNoBurstNoResync(t *testing.T) {
	listed := types.NamespacedName{Namespace: "ns", Name: "listed"}
	rec := newFakeReconciler(nil)
	ts := startServer(t, rec, Options{}, listed)
	for i := range 3 * burst.Owners {
		// Not converged (Ready Unknown, for no settled reason): reconciled.
		e := withReady(fooResourceEvent("update", "ns", fmt.Sprint("k", i)), 1, 1, "Unknown", "")
		if i < burst.Owners-1 {
			e = fooResourceEvent("add", "ns", fmt.Sprint("k", i))
		}
		if r := send(t, ts.url, e, false); r.code != http.StatusOK {
			t.Fatalf("event %d answered %d, want 200", i, r.code)
		}
	}
	// A ping's resync, then: the list is reconciled once, by it.
	if r := send(t, ts.url, pingEvent(), false); r.code != http.StatusOK {
		t.Fatalf("ping answered %d, want 200", r.code)
	}
	if got := rec.callsOf(listed.String()); got != 1 {
		t.Errorf("%s reconciled %d times, want once (the ping's resync)", listed, got)
	}
}

func TestPingResyncsTheListedKeys(t *testing.T) {
	keys := []types.NamespacedName{{Namespace: "a", Name: "one"}, {Namespace: "a", Name: "two"}, {Namespace: "b", Name: "three"}}
	var done sync.Map
	rec := newFakeReconciler(func(_ context.Context, key string) error {
		time.Sleep(10 * time.Millisecond)
		done.Store(key, true)
		return nil
	})
	ts := startServer(t, rec, Options{}, keys...)
	if r := send(t, ts.url, pingEvent(), false); r.code != http.StatusOK {
		t.Fatalf("answer = %d %s", r.code, r.body)
	}
	for _, k := range []string{"a/one", "a/two", "b/three"} {
		if _, ok := done.Load(k); !ok {
			t.Errorf("%s was not reconciled before the answer", k)
		}
	}
}

func TestColdStartResync(t *testing.T) {
	keys := []types.NamespacedName{{Namespace: "ns", Name: "x"}, {Namespace: "ns", Name: "y"}}
	reconciledAtStart := func(on bool, within time.Duration) bool {
		rec := newFakeReconciler(nil)
		startServer(t, rec, Options{ColdStartResync: on}, keys...)
		return wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, within, true,
			func(context.Context) (bool, error) { return rec.callsOf("ns/x") == 1 && rec.callsOf("ns/y") == 1, nil }) == nil
	}
	if !reconciledAtStart(true, 10*time.Second) {
		t.Error("with the resync on, the Foos were not reconciled at start")
	}
	// A negative can only be watched for a while: the resync above took
	// milliseconds; give it half a second.
	if reconciledAtStart(false, 500*time.Millisecond) {
		t.Error("with the resync off, the Foos were reconciled at start")
	}
}

func TestProbes(t *testing.T) {
	ts := startServer(t, newFakeReconciler(nil), Options{})
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(ts.url + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s = %d, want 200", p, resp.StatusCode)
		}
	}
}

func TestShutdownDrainsInFlightEvents(t *testing.T) {
	release := make(chan struct{})
	rec := newFakeReconciler(func(context.Context, string) error { <-release; return nil })
	ts := startServer(t, rec, Options{})

	got := make(chan response, 1)
	go func() { got <- send(t, ts.url, fooResourceEvent("add", "ns", "a"), false) }()
	<-rec.started

	ts.stop() // what SIGTERM does through signals.NewContext
	// Stopped accepting: new connections are refused.
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 5*time.Second, true,
		func(context.Context) (bool, error) {
			c, err := net.Dial("tcp", strings.TrimPrefix(ts.url, "http://"))
			if err == nil {
				c.Close()
			}
			return err != nil, nil
		}); err != nil {
		t.Fatal("still accepting connections after shutdown began")
	}
	select {
	case err := <-ts.done:
		t.Fatalf("Run() returned (%v) with a reconcile in flight", err)
	default:
	}
	close(release)
	if r := <-got; r.code != http.StatusOK {
		t.Errorf("in-flight event answered %d, want 200", r.code)
	}
	err := <-ts.done
	ts.done <- err // for the cleanup
	if err != nil {
		t.Error("Run() =", err)
	}
}

// watching returns how many watches wait on key.
func (ts *testServer) watching(key string) int {
	return ts.srv.completion.Waiting(key)
}

func TestAckOnEnqueueAnswersBeforeTheReconcile(t *testing.T) {
	release := make(chan struct{})
	rec := newFakeReconciler(func(context.Context, string) error { <-release; return nil })
	ts := startServer(t, rec, Options{AckOnEnqueue: true})
	if r := send(t, ts.url, fooResourceEvent("add", "ns", "a"), false); r.code != http.StatusAccepted {
		t.Errorf("answer = %d, want 202 before the reconcile", r.code)
	}
	// The key was enqueued: its reconcile runs (and is drained on shutdown).
	if key := <-rec.started; key != "ns/a" {
		t.Errorf("reconciled %q", key)
	}
	close(release)
}

// TestPoisonEventsAreBadRequests: an event naming a namespace or name the API
// server refuses is answered 400 with its reason, and never reaches the
// workqueue (where the real reconciler would fail on it, and the sender, told
// 503, would deliver it again until it gave up).
func TestPoisonEventsAreBadRequests(t *testing.T) {
	for name, tc := range map[string]struct {
		event cloudevents.Event
		want  string
	}{
		"foo in namespace a%b":        {fooResourceEvent("add", "a%b", "a"), `event names an invalid namespace "a%b": `},
		"foo named ..":                {refEvent("update", fooAPIVersion, "Foo", "foos", "ns", ".."), `event names an invalid Foo name "..": `},
		"deployment named A":          {deploymentResourceEvent("delete", "ns", "A", "a"), `event names an invalid Deployment name "A": `},
		"deployment owned by Foo a%b": {deploymentResourceEvent("update", "ns", "web", "a%b"), `event names an invalid Foo name "a%b" in its owner reference: `},
	} {
		for _, structured := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s structured=%v", name, structured), func(t *testing.T) {
				rec := newFakeReconciler(nil)
				ts := startServer(t, rec, Options{})
				got := send(t, ts.url, tc.event, structured)
				if got.code != http.StatusBadRequest || !strings.Contains(got.body, tc.want) {
					t.Errorf("answer = %d %q, want 400 containing %q", got.code, got.body, tc.want)
				}
				if strings.Count(strings.TrimSpace(got.body), "\n") > 0 {
					t.Errorf("answer body %q is more than one line", got.body)
				}
				if n := ts.enqueues.Load(); n != 0 {
					t.Errorf("%d events reached the workqueue", n)
				}
				rec.mu.Lock()
				defer rec.mu.Unlock()
				if len(rec.calls) != 0 {
					t.Errorf("reconciled %v", rec.calls)
				}
			})
		}
	}
}

// TestMediaTypesAreCaseInsensitive: media types, and their parameters'
// names, are case-insensitive (RFC 9110), in binary mode's Content-Type (the
// data's) as in structured mode's (the envelope's, which sdk-go's
// format.Lookup lowers).
func TestMediaTypesAreCaseInsensitive(t *testing.T) {
	event := fooResourceEvent("add", "ns", "a")
	binary := http.Header{}
	for k, v := range map[string]string{"Ce-Specversion": "1.0", "Ce-Type": event.Type(), "Ce-Source": event.Source(),
		"Ce-Id": event.ID(), "Ce-Kind": "Foo", "Ce-Apiversion": fooAPIVersion} {
		binary.Set(k, v)
	}
	structured, _ := event.MarshalJSON()
	tests := []struct {
		name        string
		contentType string
		body        []byte
		want        int
	}{
		{"binary APPLICATION/JSON", "APPLICATION/JSON", event.Data(), http.StatusOK},
		{"binary Application/Json; charset=utf-8", "Application/Json; charset=utf-8", event.Data(), http.StatusOK},
		{"binary application/json; CHARSET=UTF-8", "application/json; CHARSET=UTF-8", event.Data(), http.StatusOK},
		{"binary application/vnd.foo+JSON", "application/vnd.foo+JSON", event.Data(), http.StatusOK},
		{"structured APPLICATION/CLOUDEVENTS+JSON", "APPLICATION/CLOUDEVENTS+JSON", structured, http.StatusOK},
		{"structured Application/CloudEvents+Json; charset=UTF-8", "Application/CloudEvents+Json; charset=UTF-8", structured, http.StatusOK},
		// Still refused: not JSON, or not a media type.
		{"binary TEXT/PLAIN", "TEXT/PLAIN", event.Data(), http.StatusBadRequest},
		{"binary application/jsonx", "application/jsonx", event.Data(), http.StatusBadRequest},
		{"binary not a media type", "json", event.Data(), http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newFakeReconciler(nil)
			ts := startServer(t, rec, Options{})
			h := http.Header{}
			if strings.HasPrefix(tc.name, "binary") {
				h = binary.Clone()
			}
			h.Set("Content-Type", tc.contentType)
			got := post(t, ts.url, h, bytes.NewReader(tc.body))
			if got.code != tc.want {
				t.Errorf("answer = %d %q, want %d", got.code, got.body, tc.want)
			}
			if wantCalls := map[bool]int{true: 1}[tc.want == http.StatusOK]; rec.callsOf("ns/a") != wantCalls {
				t.Errorf("reconciles of ns/a = %d, want %d", rec.callsOf("ns/a"), wantCalls)
			}
		})
	}
}

// admit is a Verifier that admits every request, its sender known to
// deliver in order or not.
type admit struct{ inOrder bool }

func (a admit) Verify(http.ResponseWriter, *http.Request) (inOrder, ok bool) { return a.inOrder, true }

// A Foo's add event hands its object to the reconcile it asks for only when
// the Verifier says its sender delivers in order.
func TestOnlyAnInOrderSendersObjectIsHandedOff(t *testing.T) {
	for _, inOrder := range []bool{true, false} {
		store := handoff.New(0)
		var handedOff atomic.Bool
		rec := newFakeReconciler(func(_ context.Context, key string) error {
			ns, name, _ := strings.Cut(key, "/")
			_, ok := store.Take(types.NamespacedName{Namespace: ns, Name: name})
			handedOff.Store(ok)
			return nil
		})
		ts := startServer(t, rec, Options{Verifier: admit{inOrder}})
		ts.srv.decoder.Handoff = store
		if got := send(t, ts.url, fooResourceEvent("add", "ns", "one"), false); got.code != http.StatusOK {
			t.Fatalf("answer = %d %s, want 200", got.code, got.body)
		}
		if handedOff.Load() != inOrder {
			t.Errorf("sender in order: %v; the reconcile was handed the object: %v", inOrder, handedOff.Load())
		}
	}
}

// laterKeys records what Options.Later learns.
type laterKeys struct {
	mu   sync.Mutex
	errs map[string][]error
}

func (l *laterKeys) Reconciled(key string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs[key] = append(l.errs[key], err)
}

// Every reconcile's outcome reaches Options.Later; a requeue after a delay is
// an answer (200), and the workqueue runs the key again after it too.
func TestLaterLearnsEveryReconcilesOutcome(t *testing.T) {
	requeue := controller.NewRequeueAfter(10 * time.Millisecond)
	rec := newFakeReconciler(func(_ context.Context, key string) error {
		if key == "ns/a" {
			return requeue
		}
		return nil
	})
	later := &laterKeys{errs: map[string][]error{}}
	ts := startServer(t, rec, Options{Later: later})
	if r := send(t, ts.url, fooResourceEvent("add", "ns", "a"), false); r.code != http.StatusOK {
		t.Fatalf("answer %d %s, want 200", r.code, r.body)
	}
	if r := send(t, ts.url, fooResourceEvent("add", "ns", "b"), false); r.code != http.StatusOK {
		t.Fatalf("answer %d %s, want 200", r.code, r.body)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return rec.callsOf("ns/a") >= 2, nil
	}); err != nil {
		t.Fatalf("ns/a reconciled %d times, want a second time after its delay", rec.callsOf("ns/a"))
	}
	later.mu.Lock()
	defer later.mu.Unlock()
	if got := later.errs["ns/a"]; len(got) < 2 || got[0] != requeue {
		t.Errorf("Later learned %v of ns/a, want the requeue of each reconcile", got)
	}
	if got := later.errs["ns/b"]; len(got) != 1 || got[0] != nil {
		t.Errorf("Later learned %v of ns/b, want one success", got)
	}
}
