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
