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
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"github.com/cloudevents/sdk-go/v2/binding/format"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"
	"knative.dev/pkg/logging"
)

// What an event holds while it is read and decoded, and how long it may
// take, from its arrival:
//
//   - at most MaxInflightEvents events are handled at once; one more is
//     answered 503 at once, before its body is read;
//   - event bodies hold at most MaxInflightBytes at once: an event waits for
//     room for its body (its Content-Length, or MaxBodyBytes when it is sent
//     chunked) until its deadline, then is answered 503; the room is given
//     back once the event is decoded, before it waits for its reconciles;
//   - its deadline is AckDeadline after its headers arrived: a body that has
//     not arrived by then, like reconciles that have not finished, is
//     answered 503, which every sender delivers again.

// writeGrace is how long after its deadline an event's answer may still be
// written.
const writeGrace = 10 * time.Second

// intake takes events in: it admits them, reads their bodies within the
// budget and decodes them, and does their lookups once their bodies are
// released.
type intake struct {
	decoder *Decoder
	// maxEvents, maxBody, budget's size and deadline: Options'
	// MaxInflightEvents, MaxBodyBytes, MaxInflightBytes and AckDeadline.
	maxEvents int64
	maxBody   int64
	maxBytes  int64
	deadline  time.Duration

	// inflight counts the events handled.
	inflight atomic.Int64
	// budget holds MaxInflightBytes of event bodies.
	budget *semaphore.Weighted
}

func newIntake(decoder *Decoder, maxEvents int, maxBody, maxBytes int64, deadline time.Duration) *intake {
	return &intake{decoder: decoder, maxEvents: int64(maxEvents), maxBody: maxBody, maxBytes: maxBytes,
		deadline: deadline, budget: semaphore.NewWeighted(maxBytes)}
}

// intakeStatusError is why an event was not taken in: its answer.
type intakeStatusError struct {
	code int
	msg  string
	// close asks to close the connection after the answer: the body was not
	// read, or not to its end.
	close bool
}

func (e *intakeStatusError) Error() string { return e.msg }

// admit counts an event in flight, or answers 503 when MaxInflightEvents are
// already. Call release when the event is answered.
func (in *intake) admit(w http.ResponseWriter) (release func(), ok bool) {
	if in.inflight.Add(1) > in.maxEvents {
		in.inflight.Add(-1)
		w.Header().Set("Retry-After", "1")
		reply(w, http.StatusServiceUnavailable, fmt.Sprintf("over %d events in flight", in.maxEvents))
		return nil, false
	}
	return func() { in.inflight.Add(-1) }, true
}

// take reads and decodes the request's event, from sender, by deadline,
// within the body budget, does its lookup once the body is released, and
// returns what it asks for, its names and a logger that names it. When it
// cannot, it answers the request itself and returns why.
func (in *intake) take(w http.ResponseWriter, r *http.Request, sender Sender, deadline time.Time) (Target, eventNames, *zap.SugaredLogger, error) {
	ctx := r.Context()
	logger := logging.FromContext(ctx)
	rc := http.NewResponseController(w)
	// Whatever the server's WriteTimeout, the answer can be written after
	// the deadline. (Not supported by some ResponseWriters: then the
	// server's timeouts apply.)
	_ = rc.SetWriteDeadline(deadline.Add(writeGrace))

	target, names, err := in.readAndDecode(ctx, w, r, rc, sender, deadline)
	if err == nil {
		resolveCtx, cancel := context.WithDeadline(ctx, deadline)
		target, err = in.decoder.Resolve(resolveCtx, target)
		cancel()
	}
	if names.typ != "" {
		logger = logger.With(zap.String("type", names.typ), zap.String("id", names.id), zap.String("subject", names.subject))
	}
	var status *intakeStatusError
	switch {
	case err == nil:
		return target, names, logger, nil
	case errors.As(err, &status):
		if status.close {
			w.Header().Set("Connection", "close")
		}
		reply(w, status.code, status.msg)
	case IsBadEvent(err):
		reply(w, http.StatusBadRequest, err.Error())
	default:
		logger.Warnw("Failed to map event", zap.Error(err))
		reply(w, http.StatusServiceUnavailable, err.Error())
	}
	return Target{}, names, nil, err
}

// readAndDecode holds the event's body only while it decodes it: the event
// itself is garbage once this returns.
func (in *intake) readAndDecode(ctx context.Context, w http.ResponseWriter, r *http.Request, rc *http.ResponseController, sender Sender, deadline time.Time) (Target, eventNames, error) {
	body, release, err := in.readBody(ctx, w, r, rc, deadline)
	if err != nil {
		return Target{}, eventNames{}, err
	}
	defer release()
	event, err := parseEvent(ctx, r.Header, body)
	if err != nil {
		return Target{}, eventNames{}, err
	}
	names := eventNames{typ: event.Type(), id: event.ID(), subject: event.Subject()}
	target, err := in.decoder.Decode(event, sender)
	return target, names, err
}

// readBody reads the whole body into a buffer of its size, once the budget
// has room for it, by deadline. release gives the room back.
func (in *intake) readBody(ctx context.Context, w http.ResponseWriter, r *http.Request, rc *http.ResponseController, deadline time.Time) (_ []byte, release func(), _ error) {
	limit := in.maxBody
	n := r.ContentLength
	if n > limit {
		return nil, nil, &intakeStatusError{code: http.StatusRequestEntityTooLarge, close: true,
			msg: fmt.Sprintf("body of %d bytes is over the limit of %d", n, limit)}
	}
	held := n
	if n < 0 { // chunked: its size is known once read
		held = limit
	}
	budget := in.budget
	waitCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if err := budget.Acquire(waitCtx, held); err != nil {
		return nil, nil, &intakeStatusError{code: http.StatusServiceUnavailable, close: true,
			msg: fmt.Sprintf("no room for a body of %d bytes within %v: %d bytes of event bodies are in flight at most", held, in.deadline, in.maxBytes)}
	}
	release = func() { budget.Release(held) }

	// The body must arrive by the deadline. (Not supported by some
	// ResponseWriters: then the server's ReadTimeout applies.)
	_ = rc.SetReadDeadline(deadline)
	var body []byte
	var err error
	if n >= 0 {
		body = make([]byte, n)
		_, err = io.ReadFull(r.Body, body)
	} else {
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	}
	if err == nil {
		// No deadline while the event waits for its reconciles: once the
		// body has hit its end, the server reads on to learn whether the
		// sender hangs up. A sized read stops short of the end: hit it.
		_ = rc.SetReadDeadline(time.Time{})
		var end [1]byte
		_, _ = r.Body.Read(end[:])
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
	case errors.As(err, &tooBig):
		err = &intakeStatusError{code: http.StatusRequestEntityTooLarge, close: true,
			msg: fmt.Sprintf("body is over the limit of %d bytes", limit)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = &intakeStatusError{code: http.StatusServiceUnavailable, close: true,
			msg: fmt.Sprintf("body not received within %v", in.deadline)}
	default:
		err = &intakeStatusError{code: http.StatusBadRequest, close: true, msg: "failed to read body: " + err.Error()}
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	if n < 0 {
		// Give back what the chunked body did not take.
		budget.Release(held - int64(len(body)))
		held = int64(len(body))
	}
	return body, release, nil
}

// parseEvent reads a CloudEvent from the request's header and body, in
// binary or structured mode, without copying the body: in binary mode the
// body becomes the event's data. Errors are 400s.
func parseEvent(ctx context.Context, header http.Header, body []byte) (*cloudevents.Event, error) {
	msg := cehttp.NewMessage(header, nil)
	var event *cloudevents.Event
	switch enc := msg.ReadEncoding(); enc {
	case binding.EncodingBinary:
		// The attributes from the header; the data is the body.
		e, err := binding.ToEvent(ctx, msg)
		if err != nil {
			return nil, badEvent("malformed CloudEvent: %v", err)
		}
		if len(body) > 0 {
			e.DataEncoded = body
		}
		event = e
	case binding.EncodingStructured:
		// What binding.ToEvent does with the body, less a copy of it.
		e := cloudevents.NewEvent()
		if err := format.Lookup(header.Get(cehttp.ContentType)).Unmarshal(body, &e); err != nil {
			return nil, badEvent("malformed CloudEvent: %v", err)
		}
		event = &e
	case binding.EncodingBatch:
		return nil, badEvent("batched CloudEvents are not supported")
	default:
		return nil, badEvent("not a CloudEvent: no ce-specversion header and not application/cloudevents+json")
	}
	if err := event.Validate(); err != nil {
		return nil, badEvent("invalid CloudEvent: %s", oneLine(err.Error()))
	}
	return event, nil
}

// eventNames is what the log says of an event.
type eventNames struct{ typ, id, subject string }
