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

package connlimit

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// idleConn opens a keep-alive connection to addr, completes one request on
// it and leaves it idle.
func idleConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET / = %d (close %v), want 200 on a kept-alive connection", resp.StatusCode, resp.Close)
	}
	return c
}

// A client holding max idle keep-alive connections does not keep a sender
// out: the idlest gives way once silent for the grace. (With the idle ones
// counted as busy, the sender waited for the server's idle timeout, 90 s.)
func TestIdleConnectionsGiveWayToASender(t *testing.T) {
	const max = 1000 // the receiver's default
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limiter := New(ln, max)
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), ConnState: limiter.Track}
	go srv.Serve(limiter)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	for range max {
		idleConn(t, addr)
	}

	// Well below the idle timeout (90 s), and above the grace.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 3 * silentGrace}
	start := time.Now()
	resp, err := client.Post("http://"+addr+"/", "text/plain", nil)
	if err != nil {
		t.Fatalf("request from a new sender: %v; want it answered while idle connections fill the cap", err)
	}
	resp.Body.Close()
	t.Logf("answered in %v with %d idle connections open", time.Since(start), max)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatal("waiting for", what)
	}
}

// At the cap, the connection idle longest is closed first, whether it is
// between requests or yet to send one (once silent for the grace); a busy one
// is never closed.
func TestTheIdlestIsClosedFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limiter := New(ln, 3)
	limiter.grace = 0 // (the shutdown test needs the grace: a burst of accepts runs ahead of the reads)
	release := make(chan struct{})
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/busy" {
				<-release
			}
		}),
		ConnState: limiter.Track,
	}
	go srv.Serve(limiter)
	t.Cleanup(func() { close(release); srv.Close() })
	addr := ln.Addr().String()

	idle := idleConn(t, addr)
	// The server marks it idle after the client has its answer: wait for
	// that, so that it is idle longer than the silent one dialled next.
	waitFor(t, "the first connection idle", func() bool {
		limiter.mu.Lock()
		defer limiter.mu.Unlock()
		for _, s := range limiter.conns {
			return s.idle && !s.fresh
		}
		return false
	})
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	if _, err := io.WriteString(busy, "GET /busy HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	silent, err := net.Dial("tcp", addr) // yet to send: idle since accepted
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	waitFor(t, "three connections tracked, one busy", func() bool {
		limiter.mu.Lock()
		defer limiter.mu.Unlock()
		n := 0
		for _, s := range limiter.conns {
			if !s.idle {
				n++
			}
		}
		return len(limiter.conns) == 3 && n == 1
	})

	for i, closed := range []net.Conn{idle, silent} {
		// A transport of its own: a new connection, which stays open.
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("new connection %d at the cap: %v", i, err)
		}
		resp.Body.Close()
		_ = closed.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := closed.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("connection %d read: %v, want it closed to make room", i, err)
		}
	}
	_ = busy.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := busy.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("busy connection read: %v, want it still open, waiting for its answer", err)
	}
}

// A connection whose request sits unread in its socket (the server too busy
// to read it yet) is not silent, however long it has been since it was
// accepted: it is not closed to make room.
func TestAConnectionHoldingARequestIsNotTakenForSilent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	limiter := New(ln, 1)
	limiter.grace = 0
	t.Cleanup(func() { limiter.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err := limiter.Accept() // nobody reads it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	victim := func() net.Conn {
		limiter.mu.Lock()
		defer limiter.mu.Unlock()
		v, _ := limiter.idlest(time.Now())
		return v
	}
	if v := victim(); v != server {
		t.Fatalf("silent connection: idlest = %v, want it", v)
	}
	if _, err := io.WriteString(client, "POST / HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the request in the socket", func() bool { return pending(server) })
	if v := victim(); v != nil {
		t.Errorf("idlest = %v with a request unread in it, want none", v)
	}
}

// late is a listener whose process is too busy to look at its queue before
// a drain's quiet has passed.
type late struct{ *net.TCPListener }

func (l late) Accept() (net.Conn, error) {
	time.Sleep(3 * drainQuiet)
	return l.TCPListener.Accept()
}

// A drain takes every connection the kernel queued, even when Accept looks
// after its deadline: closed unaccepted, they would be reset under their
// senders, their requests unanswered.
func TestADrainTakesWhatTheKernelQueuedEvenWhenLate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(late{ln.(*net.TCPListener)}, 10)
	defer l.Close()
	const queued = 5
	for range queued {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	l.Drain()
	accepted := 0
	for {
		c, err := l.Accept()
		if errors.Is(err, ErrDrained) {
			break
		}
		if err != nil {
			t.Fatal("Accept() =", err)
		}
		c.Close()
		accepted++
	}
	if accepted != queued {
		t.Errorf("the drain accepted %d of the %d connections queued", accepted, queued)
	}
}
