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
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/logging"

	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver/internal/completion"
	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver/internal/connlimit"
)

// Defaults of Options.
const (
	DefaultPort         = 8080
	DefaultMaxBodyBytes = 1 << 20
	DefaultAckDeadline  = 30 * time.Second
	DefaultMaxFailures  = 5
	// DefaultWorkers: each reconcile waits on requests an informer's cache
	// would have answered, so more keys run at once than in an informer-based
	// controller (knative.dev/pkg's default is 2).
	DefaultWorkers = 32
	// DefaultMaxInflightBytes, DefaultMaxInflightEvents and
	// DefaultMaxConnections keep the process well within the Knative
	// Service's 128Mi memory limit (see docs/architecture.md, Limits).
	DefaultMaxInflightBytes  = 8 << 20
	DefaultMaxInflightEvents = 500
	DefaultMaxConnections    = 1000
)

// Options configure a Server. Zero values take the defaults above.
type Options struct {
	// Name names the workqueue (and its metrics); "reconciler" when empty.
	Name string
	// Address to listen on; ":<Port>" when empty.
	Address string
	Port    int
	// MaxBodyBytes caps an event's body; a bigger one is answered 413. At
	// most MaxInflightBytes.
	MaxBodyBytes int64
	// MaxInflightBytes caps the bytes of event bodies held at once; an event
	// waits for room for its body until its deadline, then is answered 503.
	// A body is held only until its event is decoded.
	MaxInflightBytes int64
	// MaxInflightEvents caps the events handled at once; more are answered
	// 503 at once.
	MaxInflightEvents int
	// MaxConnections caps the connections open at once. At the cap, a new
	// connection takes the place of the one idle longest (between requests,
	// or yet to send one) once it has been silent 5 s; until then it waits
	// in the kernel's queue. Keep it above
	// MaxInflightEvents and the sender's own limits (Knative's
	// containerConcurrency), so that only a flood waits.
	MaxConnections int
	// AckDeadline bounds how long an event may take, from the arrival of its
	// headers: its body's arrival, its turn for memory and its reconciles.
	// Past it, the event is answered 503. Keep it below the Knative
	// Service's timeoutSeconds.
	AckDeadline time.Duration
	// Workers is how many keys are reconciled at once.
	Workers int
	// MaxFailures is how many failed reconciles of a key (retried with
	// backoff) an event sits through before it is answered 503.
	MaxFailures int
	// ShutdownTimeout bounds the drain on shutdown: in-flight events are
	// answered and in-flight reconciles finished within it.
	ShutdownTimeout time.Duration
	// AckOnEnqueue answers an event as soon as its keys are enqueued,
	// instead of once they are reconciled. Only for a sender that delivers
	// one event at a time and retries little (ApiServerSource wired
	// directly), where waiting makes a burst reconcile one key at a time:
	// what a crash then loses, the cold-start resync (which must be on) and
	// the ping resync restore; a SIGTERM drains the queue first.
	AckOnEnqueue bool
	// Verifier, if set, decides who may deliver events (see package auth).
	Verifier Verifier
	// MeterProvider makes the receiver's metrics (see metrics.go); the
	// global one (otel.GetMeterProvider) when nil.
	MeterProvider metric.MeterProvider
	// ColdStartResync asks the KeyLister once the server listens and
	// enqueues the keys (in the slow lane, behind events): the adapter sends
	// nothing for changes made while no reconciler ran.
	ColdStartResync bool
	// Spread, if set, shares the keys with the other processes that serve
	// the operator: each is reconciled only where it is held, and an
	// event's keys held elsewhere are sent on there (to KeysPath). Not with
	// AckOnEnqueue.
	Spread Spread
	// Later, if set, learns the outcome of every reconcile of a key, so that
	// a key that asked to be run again later (controller.NewRequeueAfter) is
	// run then even if the process is gone by then (see package requeue).
	Later Later
}

func (o Options) withDefaults() Options {
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Address == "" {
		o.Address = ":" + strconv.Itoa(o.Port)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxInflightBytes <= 0 {
		o.MaxInflightBytes = DefaultMaxInflightBytes
	}
	o.MaxBodyBytes = min(o.MaxBodyBytes, o.MaxInflightBytes)
	if o.MaxInflightEvents <= 0 {
		o.MaxInflightEvents = DefaultMaxInflightEvents
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.AckDeadline <= 0 {
		o.AckDeadline = DefaultAckDeadline
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = DefaultMaxFailures
	}
	if o.Name == "" {
		o.Name = "reconciler"
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = o.AckDeadline + 10*time.Second
	}
	return o
}

// Server receives CloudEvents over HTTP, enqueues the keys they map to into
// a controller.Impl around the reconciler, and answers each event once
// those keys are reconciled. It serves /healthz and /readyz on the same
// port.
type Server struct {
	opts Options
	impl *controller.Impl
	// completion tells when the keys an event enqueued are reconciled.
	completion *completion.Tracker
	decoder    *Decoder
	ready      atomic.Bool
	// draining answers every new event 503: the process is stopping.
	draining atomic.Bool

	// enqueued, if set, is called once an event's keys are enqueued (tests).
	enqueued func()

	resyncs *resyncs
	// forwarder sends keys on to the process that holds them (Spread).
	forwarder *http.Client

	intake  *intake
	metrics *instruments
}

// Verifier decides whether a request may deliver an event (ok), before its
// body is read. When not, it answers the request itself (401 or 403). When
// it may, inOrder says whether the sender is known to deliver each object's
// events in order, one at a time, as its watch saw them (an ApiServerSource
// adapter wired directly): only then may an event's object stand in for a
// read (see Decoder.Handoff).
type Verifier interface {
	Verify(w http.ResponseWriter, r *http.Request) (inOrder, ok bool)
}

// New returns a Server feeding rec (a generated reconciler, typically) from
// the events that decoder maps; resync says which keys a resync (the
// ping's, and the cold start's) reconciles. It builds the controller.Impl,
// around a wrapper of rec that learns each reconcile's outcome: ctx holds
// its logger. Nothing else feeds the Impl's queue.
func New(ctx context.Context, rec controller.Reconciler, decoder *Decoder, resync KeyLister, opts Options) *Server {
	opts = opts.withDefaults()
	metrics := newInstruments(opts.MeterProvider)
	o := completion.New(&observed{inner: rec, metrics: metrics, later: opts.Later, spread: opts.Spread}, opts.MaxFailures)
	impl := controller.NewContext(ctx, o, controller.ControllerOptions{
		WorkQueueName: opts.Name,
		Logger:        logging.FromContext(ctx),
	})
	s := &Server{opts: opts, impl: impl, completion: o, decoder: decoder, forwarder: &http.Client{},
		intake: newIntake(decoder, opts.MaxInflightEvents, opts.MaxBodyBytes, opts.MaxInflightBytes, opts.AckDeadline), metrics: metrics}
	s.resyncs = &resyncs{lister: resync, decoder: decoder, impl: impl, metrics: metrics,
		deadline: opts.AckDeadline, spread: opts.Spread, settle: s.settle, settleHere: s.settleHere, handBurst: s.handBurst,
		bursts: make(chan aBurst, 1)}
	return s
}

// Handler returns the HTTP handler: events on /, probes on /healthz and /readyz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc(KeysPath, s.serveKeys)
	mux.HandleFunc("/", s.serveEvent)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &closing{ResponseWriter: w, draining: &s.draining}
		mux.ServeHTTP(cw, r)
		if !cw.wrote {
			cw.WriteHeader(http.StatusOK)
		}
	})
}

// closing asks the sender to close the connection with every answer
// written once the server drains: its keep-alive connections then close as
// their requests are answered, and none is closed under a sender that may
// be writing its next request.
type closing struct {
	http.ResponseWriter
	draining *atomic.Bool
	wrote    bool
}

func (w *closing) WriteHeader(code int) {
	if !w.wrote && w.draining.Load() {
		w.Header().Set("Connection", "close")
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *closing) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (w *closing) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Run starts the workers and serves until ctx is done, then drains: it
// answers 503 to every event that arrives from then on (on the connections
// open, and on those the kernel has queued, which it takes in), stops
// accepting, lets in-flight events be answered and their reconciles finish
// (within ShutdownTimeout), then stops the workers. ready, if not nil, is
// called with the listening address once the server accepts connections.
func (s *Server) Run(ctx context.Context, ready func(net.Addr)) error {
	logger := logging.FromContext(ctx)
	ln, err := net.Listen("tcp", s.opts.Address)
	if err != nil {
		return fmt.Errorf("failed to listen on %s: %w", s.opts.Address, err)
	}
	limiter := connlimit.New(ln, s.opts.MaxConnections)

	// The workers outlive ctx: they finish what in-flight events wait for.
	implCtx, stopImpl := context.WithCancel(context.WithoutCancel(ctx))
	defer stopImpl()
	implDone := make(chan error, 1)
	go func() { implDone <- s.impl.RunContext(implCtx, s.opts.Workers) }()

	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      s.opts.AckDeadline + 10*time.Second,
		IdleTimeout:       90 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return logging.WithLogger(context.Background(), logger) },
		ConnState:         limiter.Track,
	}
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(limiter) }()
	s.ready.Store(true)
	s.metrics.coldStarts.Add(ctx, 1)
	logger.Infow("Receiving events", zap.String("address", ln.Addr().String()))
	if ready != nil {
		ready(ln.Addr())
	}
	switch {
	case s.opts.ColdStartResync:
		go s.resyncs.atStart(ctx)
	case s.opts.Spread != nil:
		// No cold-start resync to wait for: none is owed by this process.
		go func() {
			if s.opts.Spread.Settle(ctx) {
				s.opts.Spread.Resynced()
			}
		}()
	}
	go s.resyncs.forBursts(ctx)
	if s.opts.Spread != nil {
		go s.resyncs.forTakeovers(ctx)
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-serveDone:
	}
	s.ready.Store(false)
	logger.Info("Draining: answering in-flight events")
	drainCtx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	if serveErr == nil {
		// Every connection the kernel queued is taken in and answered 503,
		// then the listener closes: later ones are refused, none is reset.
		// Every answer from now on asks its sender to close the connection.
		s.draining.Store(true)
		limiter.Drain()
		select {
		case err := <-serveDone:
			if !errors.Is(err, connlimit.ErrDrained) {
				serveErr = err
			}
		case <-drainCtx.Done():
		}
	}
	if err := limiter.AwaitClosed(drainCtx); err != nil {
		logger.Warnw("In-flight events were not all answered in time", zap.Error(err))
	}
	_ = srv.Close()
	stopImpl()
	select {
	case err := <-implDone:
		if err != nil && serveErr == nil {
			serveErr = err
		}
	case <-drainCtx.Done():
		logger.Warn("Reconciles still running at the end of the drain")
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

// serveEvent answers one CloudEvent, and records the answer.
func (s *Server) serveEvent(rw http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	w := &statusWriter{ResponseWriter: rw}
	typ, queued := "", false
	defer func() {
		s.metrics.event(context.WithoutCancel(r.Context()), eventTypeAttr(typ), outcomeOf(w.code, queued), time.Since(arrived))
	}()
	typ, queued = s.answer(w, r, arrived)
}

// answer answers one CloudEvent (see the package documentation), and
// returns its type (if it was read) and whether it was answered on enqueue.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, arrived time.Time) (typ string, queued bool) {
	deadline := arrived.Add(s.opts.AckDeadline)
	ctx := r.Context()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, "CloudEvents are POSTed")
		return "", false
	}
	if s.draining.Load() {
		w.Header().Set("Connection", "close")
		reply(w, http.StatusServiceUnavailable, drainingMsg)
		return "", false
	}
	done, ok := s.intake.admit(w)
	if !ok {
		return "", false
	}
	defer done()
	var sender Sender
	if s.opts.Verifier != nil {
		inOrder, ok := s.opts.Verifier.Verify(w, r)
		if !ok {
			return "", false // answered
		}
		sender.InOrder = inOrder
	}
	target, names, logger, err := s.intake.take(w, r, sender, deadline)
	if err != nil {
		return names.typ, false // answered
	}
	if target.Ignored != "" {
		logger.Debugw("Ignored event", zap.String("reason", target.Ignored))
		w.WriteHeader(http.StatusAccepted)
		return names.typ, false
	}
	// A burst's resync is for events that wait for their reconciles, one
	// at a time: not with AckOnEnqueue, where the queue fills at once (a
	// resync would reconcile its keys twice). Nor for the adds of an
	// in-order sender, which are handed off (Decoder.Handoff): a burst's
	// reconciles read nothing, a resync's would read each owner.
	handedOff := sender.InOrder && s.decoder.Handoff != nil
	if (target.Created && !handedOff || target.Changed) && !s.opts.AckOnEnqueue {
		s.resyncs.saw(target.Keys[0].Namespace, r.Header.Get("Authorization"))
	}
	keys := target.Keys
	if target.Resync {
		if keys, err = s.resyncs.list(ctx, "ping"); err != nil {
			logger.Warnw("Failed to list for resync", zap.Error(err))
			reply(w, http.StatusServiceUnavailable, "failed to list for resync: "+err.Error())
			return names.typ, false
		}
	}

	if s.opts.AckOnEnqueue {
		for _, k := range keys {
			if target.Resync {
				s.impl.EnqueueSlowKey(k)
			} else {
				s.impl.EnqueueKey(k)
			}
		}
		w.WriteHeader(http.StatusAccepted)
		return names.typ, true
	}
	waitCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var nr *notReconciled
	switch err := s.settle(waitCtx, r.Header.Get("Authorization"), target.Written, keys, target.Resync); {
	case err == nil:
		logger.Debugw("Reconciled", zap.Int("keys", len(keys)))
		w.WriteHeader(http.StatusOK)
	case errors.As(err, &nr):
		reply(w, http.StatusServiceUnavailable, fmt.Sprintf("%v within %v", err, s.opts.AckDeadline))
	default:
		reply(w, http.StatusServiceUnavailable, oneLine(err.Error()))
	}
	return names.typ, false
}
