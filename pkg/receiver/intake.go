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
	"net/http"
	"os"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"go.uber.org/zap"
	"knative.dev/pkg/logging"
)

// An event's deadline is AckDeadline after its headers arrived: a body that
// has not arrived by then, like reconciles that have not finished, is
// answered 503, which every sender delivers again.

// writeGrace is how long after its deadline an event's answer may still be
// written.
const writeGrace = 10 * time.Second

// intakeStatusError is why an event was not taken in: its answer.
type intakeStatusError struct {
	code int
	msg  string
	// close asks to close the connection after the answer: the body was not
	// read, or not to its end.
	close bool
}

func (e *intakeStatusError) Error() string { return e.msg }

// intake reads and decodes the request's event by deadline, and returns
// what it asks for and a logger that names it. When it cannot, it answers
// the request itself and returns why.
func (s *Server) intake(w http.ResponseWriter, r *http.Request, deadline time.Time) (Target, *zap.SugaredLogger, error) {
	ctx := r.Context()
	logger := logging.FromContext(ctx)
	rc := http.NewResponseController(w)
	// Whatever the server's WriteTimeout, the answer can be written after
	// the deadline. (Not supported by some ResponseWriters: then the
	// server's timeouts apply.)
	_ = rc.SetWriteDeadline(deadline.Add(writeGrace))

	target, names, err := s.readAndDecode(ctx, w, r, rc, deadline)
	if names.typ != "" {
		logger = logger.With(zap.String("type", names.typ), zap.String("id", names.id), zap.String("subject", names.subject))
	}
	var status *intakeStatusError
	switch {
	case err == nil:
		return target, logger, nil
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
	return Target{}, nil, err
}

// readAndDecode reads and decodes the event.
func (s *Server) readAndDecode(ctx context.Context, w http.ResponseWriter, r *http.Request, rc *http.ResponseController, deadline time.Time) (Target, eventNames, error) {
	body, release, err := s.readBody(ctx, w, r, rc, deadline)
	if err != nil {
		return Target{}, eventNames{}, err
	}
	defer release()
	event, err := parseEvent(ctx, r.Header, body)
	if err != nil {
		return Target{}, eventNames{}, err
	}
	names := eventNames{typ: event.Type(), id: event.ID(), subject: event.Subject()}
	target, err := s.decoder.Decode(ctx, event)
	return target, names, err
}

// readBody reads the whole body by deadline. release is for the caller to
// call once done with the body.
func (s *Server) readBody(_ context.Context, w http.ResponseWriter, r *http.Request, rc *http.ResponseController, deadline time.Time) (_ []byte, release func(), _ error) {
	limit := s.opts.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, nil, &intakeStatusError{code: http.StatusRequestEntityTooLarge, close: true,
			msg: fmt.Sprintf("body of %d bytes is over the limit of %d", r.ContentLength, limit)}
	}
	// The body must arrive by the deadline. (Not supported by some
	// ResponseWriters: then the server's ReadTimeout applies.)
	_ = rc.SetReadDeadline(deadline)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err == nil {
		// No deadline while the event waits for its reconciles: the server
		// reads on, to learn whether the sender hangs up.
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return body, func() {}, nil
	case errors.As(err, &tooBig):
		return nil, nil, &intakeStatusError{code: http.StatusRequestEntityTooLarge, close: true,
			msg: fmt.Sprintf("body is over the limit of %d bytes", limit)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, nil, &intakeStatusError{code: http.StatusServiceUnavailable, close: true,
			msg: fmt.Sprintf("body not received within %v", s.opts.AckDeadline)}
	default:
		return nil, nil, &intakeStatusError{code: http.StatusBadRequest, close: true, msg: "failed to read body: " + err.Error()}
	}
}

// parseEvent reads a CloudEvent from the request's header and body, in
// binary or structured mode. Errors are 400s.
func parseEvent(ctx context.Context, header http.Header, body []byte) (*cloudevents.Event, error) {
	msg := cehttp.NewMessage(header, io.NopCloser(bytes.NewReader(body)))
	defer msg.Finish(nil)
	switch enc := msg.ReadEncoding(); enc {
	case binding.EncodingBinary, binding.EncodingStructured:
	case binding.EncodingBatch:
		return nil, badEvent("batched CloudEvents are not supported")
	default:
		return nil, badEvent("not a CloudEvent: no ce-specversion header and not application/cloudevents+json")
	}
	event, err := binding.ToEvent(ctx, msg)
	if err != nil {
		return nil, badEvent("malformed CloudEvent: %v", err)
	}
	if err := event.Validate(); err != nil {
		return nil, badEvent("invalid CloudEvent: %s", oneLine(err.Error()))
	}
	return event, nil
}

// eventNames is what the log says of an event.
type eventNames struct{ typ, id, subject string }
