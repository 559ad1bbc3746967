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
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Listener is a net.Listener that keeps at most max connections open, and
// makes room for a new one by closing the one idle longest: an idle
// keep-alive connection, or one that has not sent a byte of a request yet,
// once it has been silent for the grace. Until then a new one waits; a
// server that bounds its requests in number and time keeps that wait
// short. (netutil.LimitListener counts idle connections as busy: a client
// holding max idle connections kept every other sender waiting for the
// idle timeout.) A connection in use is never closed under its sender: a
// request written on a keep-alive connection just as the server closes it
// gets no answer, so only one silent for the grace is taken for unused.
//
// Its Track method is the http.Server's ConnState hook, which tells it what
// each connection is doing.
//
// On shutdown, Drain accepts what the kernel has queued without waiting for
// room (the server answers each at once, asking to close the connection),
// then closes: a connection that reached the queue gets an HTTP answer, and
// one that arrives later is refused, instead of being reset with the queue.
type Listener struct {
	net.Listener
	max int
	// grace is how long a connection may stay silent (idle, or yet to send
	// its first request) before it may be closed to make room, or once
	// draining.
	grace time.Duration

	mu       sync.Mutex
	changed  *sync.Cond
	conns    map[net.Conn]*connState
	draining bool
	drainEnd time.Time
	// drained is when Drain was called: an idle connection's silence
	// counts from then on.
	drained time.Time
}

// connState is what a connection is doing, and since when.
type connState struct {
	idle  bool // no request in progress: StateNew or StateIdle
	fresh bool // StateNew: no request yet
	since time.Time
}

// silentGrace is how long a connection may stay silent (idle between
// requests, or yet to send its first) before it may be closed, to make
// room or once draining: far longer than a sender takes to write its next
// request even when thousands share two cores (at 1 s, a flood of 4000
// senders had some of theirs closed under them), far shorter than
// ReadHeaderTimeout and than the 30 s that Knative's queue-proxy drains.
const silentGrace = 5 * time.Second

// ErrDrained ends Serve once Drain has accepted what was queued.
var ErrDrained = errors.New("listener drained")

// New returns a Listener that accepts from ln and keeps at most max
// connections open.
func New(ln net.Listener, max int) *Listener {
	l := &Listener{Listener: ln, max: max, grace: silentGrace, conns: make(map[net.Conn]*connState, max)}
	l.changed = sync.NewCond(&l.mu)
	return l
}

// Accept returns the next connection once there is room for it; while
// draining, the next one queued, or ErrDrained once the kernel's queue is
// empty and none has arrived for drainQuiet, or drainLongest has passed.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		if l.draining {
			// A connection queued is taken however late Accept looks (the
			// process may be busy): closed unaccepted, the listener would
			// reset it under its sender.
			deadline := l.drainEnd
			if quiet := time.Now().Add(drainQuiet); quiet.Before(deadline) && !queued(l.Listener) {
				deadline = quiet
			}
			l.setDeadline(deadline)
		}
		l.mu.Unlock()
		c, err := l.Listener.Accept()
		l.mu.Lock()
		if err == nil {
			l.admit(c)
			l.mu.Unlock()
			return c, nil
		}
		draining := l.draining
		again := draining && time.Now().Before(l.drainEnd) && queued(l.Listener) // came as the deadline passed
		l.mu.Unlock()
		switch {
		case again:
		case draining:
			return nil, ErrDrained
		default:
			return nil, err
		}
	}
}

// admit waits, unless draining, for room for c, and tracks it; l.mu is
// held.
func (l *Listener) admit(c net.Conn) {
	for len(l.conns) >= l.max && !l.draining {
		victim, retry := l.idlest(time.Now())
		if victim != nil {
			delete(l.conns, victim)
			_ = victim.Close()
			break
		}
		l.waitAtMost(retry) // a new connection may be silent: look again then
	}
	l.conns[c] = &connState{idle: true, fresh: true, since: time.Now()}
}

// While draining, Accept waits drainQuiet for one more connection, and
// takes none after drainLongest: what the kernel had queued is taken in at
// once; a client that keeps connecting does not hold the listener open.
const (
	drainQuiet   = 10 * time.Millisecond
	drainLongest = time.Second
)

func (l *Listener) setDeadline(t time.Time) {
	if d, ok := l.Listener.(interface{ SetDeadline(time.Time) error }); ok {
		_ = d.SetDeadline(t)
	}
}

// idlest returns the connection idle longest, or nil when none may be
// closed yet: then retry, if not 0, says when one may be. A connection may
// be closed only once it has been silent for the grace, and holds no bytes
// the server has yet to read: a busy server can run far behind the
// requests written to it.
func (l *Listener) idlest(now time.Time) (victim net.Conn, retry time.Duration) {
	var since time.Time
	for c, s := range l.conns {
		if !s.idle {
			continue
		}
		if wait := l.silentFor(s, now); wait > 0 {
			if retry == 0 || wait < retry {
				retry = wait
			}
			continue
		}
		if pending(c) {
			continue // its request came: the server reads it, and says so
		}
		if victim == nil || s.since.Before(since) {
			victim, since = c, s.since
		}
	}
	return victim, retry
}

// silentFor returns how much longer the idle s must stay silent before it
// may be closed; 0 or less: it may. While draining, silence counts from
// the drain on at the earliest.
func (l *Listener) silentFor(s *connState, now time.Time) time.Duration {
	since := s.since
	if l.draining {
		since = latest(since, l.drained)
	}
	return since.Add(l.grace).Sub(now)
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Track is the http.Server's ConnState hook.
func (l *Listener) Track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.conns[c]
	if !ok {
		return // closed to make room
	}
	switch state {
	case http.StateActive:
		s.idle, s.fresh = false, false
	case http.StateIdle:
		s.idle, s.since = true, time.Now()
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	default:
		return
	}
	l.changed.Broadcast()
}

// Drain makes Accept take what the kernel has queued, without waiting for
// room, and then end Serve with ErrDrained; the listener closes with Serve.
func (l *Listener) Drain() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.draining, l.drained = true, time.Now()
	l.drainEnd = l.drained.Add(drainLongest)
	l.changed.Broadcast()
	l.setDeadline(time.Now().Add(drainQuiet)) // for an Accept that waits in the kernel
}

// AwaitClosed returns once every connection is closed, or ctx is done:
// after Drain, a connection closes once it is answered (the server asks the
// sender to close it), and a keep-alive one that stays idle for the grace
// is closed here. One yet to send its first request is left to the
// server's ReadHeaderTimeout: a request that reached it may not be read
// yet when the grace is over, if the server is busy. (Not
// http.Server.Shutdown: it closes idle connections at once, under a sender
// that may be writing its next request, and a request it reads once
// shutting down is dropped unanswered.)
func (l *Listener) AwaitClosed(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.changed.Broadcast()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for len(l.conns) > 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%d connections still open: %w", len(l.conns), err)
		}
		next := time.Duration(0)
		for c, s := range l.conns {
			if !s.idle || s.fresh {
				continue
			}
			if wait := l.silentFor(s, time.Now()); wait > 0 {
				if next == 0 || wait < next {
					next = wait
				}
				continue
			}
			if pending(c) {
				continue // its request came: the server answers it
			}
			delete(l.conns, c)
			_ = c.Close()
		}
		if len(l.conns) == 0 {
			break
		}
		l.waitAtMost(next)
	}
	return nil
}

// waitAtMost waits, with l.mu held, for a change of the connections, or for
// d if it is not 0.
func (l *Listener) waitAtMost(d time.Duration) {
	if d > 0 {
		t := time.AfterFunc(d, func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.changed.Broadcast()
		})
		defer t.Stop()
	}
	l.changed.Wait()
}
