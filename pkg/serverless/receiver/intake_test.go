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
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	appsv1 "k8s.io/api/apps/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// structured returns e in structured mode: its header and body.
func structured(t *testing.T, e cloudevents.Event) (http.Header, []byte) {
	t.Helper()
	body, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return http.Header{"Content-Type": {"application/cloudevents+json"}}, body
}

// paddedFooEvent is a Foo event whose structured body is about size bytes.
func paddedFooEvent(t *testing.T, ns, name string, size int) (http.Header, []byte) {
	t.Helper()
	e := fooResourceEvent("update", ns, name)
	var obj map[string]any
	if err := e.DataAs(&obj); err != nil {
		t.Fatal(err)
	}
	pad := func(n int) []byte {
		obj["metadata"].(map[string]any)["annotations"] = map[string]any{"pad": strings.Repeat("x", n)}
		if err := e.SetData(cloudevents.ApplicationJSON, obj); err != nil {
			t.Fatal(err)
		}
		_, body := structured(t, e)
		return body
	}
	n := size - len(pad(0))
	if n < 0 {
		t.Fatalf("an event of %d bytes is too small", size)
	}
	if body := pad(n); len(body) != size {
		t.Fatalf("padded event is %d bytes, want %d", len(body), size)
	}
	return structured(t, e)
}

// drip POSTs body on a connection of its own, declaring its whole length but
// writing it in pieces, one every interval, and returns the answer. It fails
// the test when no answer arrives within 5 seconds: the connection was closed
// without one, or the answer waits for the whole body.
func drip(t *testing.T, url string, header http.Header, body []byte, pieces int, every time.Duration) response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var head bytes.Buffer
	fmt.Fprintf(&head, "POST / HTTP/1.1\r\nHost: receiver\r\nContent-Length: %d\r\n", len(body))
	_ = header.Write(&head)
	head.WriteString("\r\n")
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		size := (len(body) + pieces - 1) / pieces
		for rest := body; len(rest) > 0; {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			piece := rest[:min(size, len(rest))]
			rest = rest[len(piece):]
			if _, err := conn.Write(piece); err != nil {
				return // answered and closed
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, body: string(b)}
}

// TestSlowSenderIsAnswered: the deadline counts from the event's arrival,
// so a sender whose body drips in is answered 503 (which senders deliver
// again) at the deadline, instead of having its connection closed, or its
// answer held, once the body is in.
func TestSlowSenderIsAnswered(t *testing.T) {
	const deadline = 300 * time.Millisecond
	header, body := structured(t, fooResourceEvent("update", "ns", "a"))
	t.Run("body not in by the deadline", func(t *testing.T) {
		rec := newFakeReconciler(func(ctx context.Context, _ string) error { <-ctx.Done(); return nil })
		ts := startServer(t, rec, Options{AckDeadline: deadline})
		// A byte every 20ms: the body would take several seconds.
		got := drip(t, ts.url, header, body, len(body), 20*time.Millisecond)
		if got.code != http.StatusServiceUnavailable || !strings.Contains(got.body, "body not received within 300ms") {
			t.Errorf("answer = %d %q, want 503: body not received within 300ms", got.code, got.body)
		}
		if n := rec.callsOf("ns/a"); n != 0 {
			t.Errorf("%d reconciles of an event never received", n)
		}
	})
	t.Run("body in, reconcile blocks", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		rec := newFakeReconciler(func(context.Context, string) error { <-release; return nil })
		ts := startServer(t, rec, Options{AckDeadline: deadline})
		// The whole body in 100ms, within the deadline.
		got := drip(t, ts.url, header, body, 10, 10*time.Millisecond)
		if got.code != http.StatusServiceUnavailable || !strings.Contains(got.body, "1 of 1 keys not reconciled within 300ms") {
			t.Errorf("answer = %d %q, want 503: not reconciled", got.code, got.body)
		}
	})
}

// TestBodiesAreHeldWithinTheBudget: bodies wait for room in
// MaxInflightBytes, until their deadline; a body bigger than the budget is
// 413; a body is let go once its event is decoded, before its reconciles.
func TestBodiesAreHeldWithinTheBudget(t *testing.T) {
	const budget = 64 << 10
	t.Run("a body over the budget is too large", func(t *testing.T) {
		ts := startServer(t, newFakeReconciler(nil), Options{MaxInflightBytes: budget})
		h, body := paddedFooEvent(t, "ns", "a", budget+1)
		if got := post(t, ts.url, h, bytes.NewReader(body)); got.code != http.StatusRequestEntityTooLarge {
			t.Errorf("answer = %d %q, want 413", got.code, got.body)
		}
	})
	t.Run("a body waits for room until its deadline", func(t *testing.T) {
		rec := newFakeReconciler(nil)
		ts := startServer(t, rec, Options{MaxInflightBytes: budget, AckDeadline: 300 * time.Millisecond})
		// Bodies in flight hold 48 KiB...
		room := ts.srv.intake.budget
		if !room.TryAcquire(48 << 10) {
			t.Fatal("the budget is in use")
		}
		// ...so a 32 KiB one finds no room until its deadline.
		h, body := paddedFooEvent(t, "ns", "a", 32<<10)
		got := post(t, ts.url, h, bytes.NewReader(body))
		if got.code != http.StatusServiceUnavailable || !strings.Contains(got.body, "no room for a body of 32768 bytes within 300ms") {
			t.Errorf("answer = %d %q, want 503: no room", got.code, got.body)
		}
		if n := rec.callsOf("ns/a"); n != 0 {
			t.Errorf("%d reconciles of an event that found no room", n)
		}
		// With room, it passes, and gives the room back.
		room.Release(48 << 10)
		if got := post(t, ts.url, h, bytes.NewReader(body)); got.code != http.StatusOK {
			t.Errorf("answer with room = %d %q, want 200", got.code, got.body)
		}
		if ts.budgetInUse() {
			t.Error("the body budget is still in use")
		}
	})
	t.Run("a body holds its room while it arrives", func(t *testing.T) {
		ts := startServer(t, newFakeReconciler(nil), Options{MaxInflightBytes: budget, AckDeadline: 500 * time.Millisecond})
		h, body := paddedFooEvent(t, "ns", "slow", 48<<10)
		answer := make(chan response, 1)
		go func() { answer <- drip(t, ts.url, h, body, 1000, 50*time.Millisecond) }()
		if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true,
			func(context.Context) (bool, error) { return ts.budgetInUse(), nil }); err != nil {
			t.Error("the arriving body never held room")
		}
		if got := <-answer; got.code != http.StatusServiceUnavailable {
			t.Errorf("answer = %d %q, want 503", got.code, got.body)
		}
		if ts.budgetInUse() {
			t.Error("the body budget is still in use after the answer")
		}
	})
	t.Run("a body is let go before its reconciles", func(t *testing.T) {
		release := make(chan struct{})
		rec := newFakeReconciler(func(_ context.Context, key string) error {
			if key == "ns/a" {
				<-release
			}
			return nil
		})
		ts := startServer(t, rec, Options{MaxInflightBytes: budget})
		h, body := paddedFooEvent(t, "ns", "a", 48<<10)
		first := make(chan response, 1)
		go func() { first <- post(t, ts.url, h, bytes.NewReader(body)) }()
		<-rec.started // ns/a is decoded; its reconcile blocks
		h, body = paddedFooEvent(t, "ns", "b", 48<<10)
		if got := post(t, ts.url, h, bytes.NewReader(body)); got.code != http.StatusOK {
			t.Errorf("second answer = %d %q, want 200 while the first waits for its reconcile", got.code, got.body)
		}
		close(release)
		if got := <-first; got.code != http.StatusOK {
			t.Errorf("first answer = %d %q", got.code, got.body)
		}
	})
	t.Run("a chunked body holds the largest size until read", func(t *testing.T) {
		ts := startServer(t, newFakeReconciler(nil), Options{MaxInflightBytes: budget, MaxBodyBytes: budget})
		h, body := structured(t, fooResourceEvent("update", "ns", "a"))
		for i := range 3 {
			// A reader of unknown length makes the client send it chunked.
			if got := post(t, ts.url, h, io.MultiReader(bytes.NewReader(body))); got.code != http.StatusOK {
				t.Errorf("answer %d = %d %q, want 200", i, got.code, got.body)
			}
		}
		if ts.budgetInUse() {
			t.Error("the body budget is still in use")
		}
	})
}

// TestEventsInFlightAreCapped: over MaxInflightEvents, an event is answered
// 503 at once.
func TestEventsInFlightAreCapped(t *testing.T) {
	release := make(chan struct{})
	rec := newFakeReconciler(func(context.Context, string) error { <-release; return nil })
	ts := startServer(t, rec, Options{MaxInflightEvents: 2})
	answers := make(chan response, 2)
	for _, name := range []string{"a", "b"} {
		go func() { answers <- send(t, ts.url, fooResourceEvent("update", "ns", name), false) }()
	}
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true,
		func(context.Context) (bool, error) { return ts.enqueues.Load() == 2, nil }); err != nil {
		t.Fatal("the first two events were not taken in")
	}
	got := send(t, ts.url, fooResourceEvent("update", "ns", "c"), false)
	if got.code != http.StatusServiceUnavailable || !strings.Contains(got.body, "over 2 events in flight") {
		t.Errorf("third answer = %d %q, want 503: over 2 events in flight", got.code, got.body)
	}
	close(release)
	for range 2 {
		if got := <-answers; got.code != http.StatusOK {
			t.Errorf("answer = %d %q, want 200", got.code, got.body)
		}
	}
	if got := send(t, ts.url, fooResourceEvent("update", "ns", "c"), false); got.code != http.StatusOK {
		t.Errorf("answer after = %d %q, want 200", got.code, got.body)
	}
}

// budgetInUse tells whether any of the body budget is held.
func (ts *testServer) budgetInUse() bool {
	b, size := ts.srv.intake.budget, ts.srv.opts.MaxInflightBytes
	if b.TryAcquire(size) {
		b.Release(size)
		return false
	}
	return true
}

// TestConnectionsAreCapped: over MaxConnections, a connection waits to be
// accepted until one closes, so that a flood of connections costs the
// process nothing.
func TestConnectionsAreCapped(t *testing.T) {
	release := make(chan struct{})
	rec := newFakeReconciler(func(_ context.Context, key string) error {
		if strings.HasPrefix(key, "ns/busy") {
			<-release
		}
		return nil
	})
	ts := startServer(t, rec, Options{MaxConnections: 2})
	// Two connections busy with an event each: none can make room.
	busy := make(chan response, 2)
	for i := range 2 {
		go func() { busy <- send(t, ts.url, fooResourceEvent("update", "ns", fmt.Sprint("busy", i)), false) }()
	}
	waitFor(t, "two events in flight", func() bool { return ts.srv.intake.inflight.Load() == 2 })
	answer := make(chan response, 1)
	go func() { answer <- send(t, ts.url, fooResourceEvent("update", "ns", "a"), false) }()
	// A negative can only be watched for a while.
	select {
	case got := <-answer:
		t.Fatalf("answered %d %q with two connections busy", got.code, got.body)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if got := <-answer; got.code != http.StatusOK {
		t.Errorf("answer once a connection was free = %d %q, want 200", got.code, got.body)
	}
	for range 2 {
		if got := <-busy; got.code != http.StatusOK {
			t.Errorf("busy event answered %d %q, want 200", got.code, got.body)
		}
	}
}

// TestNoAPIRequestWhileTheBodyIsHeld: the read an event needs (here, a
// delete's check that its object is gone) is made once its body is
// released, so that slow API requests do not hold the body budget.
func TestNoAPIRequestWhileTheBodyIsHeld(t *testing.T) {
	ts := startServer(t, newFakeReconciler(nil), Options{})
	reading, release := make(chan bool, 1), make(chan struct{})
	ts.srv.decoder.Owned[0].Get = func(context.Context, string, string) (metav1.Object, error) {
		reading <- ts.budgetInUse()
		<-release
		return nil, apierrs.NewNotFound(appsv1.Resource("deployments"), "web")
	}
	got := make(chan response, 1)
	go func() { got <- send(t, ts.url, deploymentResourceEvent("delete", "ns", "web", "a"), false) }()
	if <-reading {
		t.Error("the body budget was held while the API server was read")
	}
	close(release)
	if r := <-got; r.code != http.StatusOK {
		t.Errorf("answer = %d, want 200 once its Foo is reconciled", r.code)
	}
}
