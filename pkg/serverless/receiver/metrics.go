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
	"net/http"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"knative.dev/pkg/controller"
)

// The receiver's metrics, beside the workqueue's (kn.workqueue.*) and the
// API client's (kn.k8s.client.*) that knative.dev/pkg emits. Attributes take
// a bounded set of values: an event type that no source sends is "other".
const (
	metricEvents         = "serverless.events"
	metricEventDuration  = "serverless.event.duration"
	metricReconciles     = "serverless.reconciles"
	metricResyncKeys     = "serverless.resync.keys"
	metricResyncDuration = "serverless.resync.duration"
	metricColdStarts     = "serverless.cold_starts"
)

// Outcomes of an event (the outcome attribute of serverless.events).
const (
	OutcomeReconciled  = "reconciled"  // 200: its keys were reconciled
	OutcomeQueued      = "queued"      // 202: its keys were enqueued (AckOnEnqueue)
	OutcomeIgnored     = "ignored"     // 202: it asks for nothing
	OutcomeBad         = "bad"         // 4xx: it cannot be used; delivering it again will not help
	OutcomeDenied      = "denied"      // 401, 403: its sender may not send events here
	OutcomeUnavailable = "unavailable" // 503: not done in time, or failed; to be delivered again
)

// instruments records the receiver's metrics.
type instruments struct {
	events         metric.Int64Counter
	eventDuration  metric.Float64Histogram
	reconciles     metric.Int64Counter
	resyncKeys     metric.Int64Histogram
	resyncDuration metric.Float64Histogram
	coldStarts     metric.Int64Counter
}

// newInstruments makes the instruments from mp, the global provider when nil.
func newInstruments(mp metric.MeterProvider) *instruments {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter("github.com/frugal-operator/foo-operator/pkg/serverless/receiver")
	// Errors are reported to otel's error handler; the instrument is then a
	// no-op, which is all a caller could do about it.
	var in instruments
	in.events, _ = m.Int64Counter(metricEvents, metric.WithUnit("{event}"),
		metric.WithDescription("Events answered, by type and outcome"))
	in.eventDuration, _ = m.Float64Histogram(metricEventDuration, metric.WithUnit("s"),
		metric.WithDescription("Time from an event's arrival to its answer"))
	// Their durations are the workqueue's kn.workqueue.process.duration,
	// which has no outcome.
	in.reconciles, _ = m.Int64Counter(metricReconciles, metric.WithUnit("{reconcile}"),
		metric.WithDescription("Reconciles, by outcome: success, permanent_error, skipped or error"))
	in.resyncKeys, _ = m.Int64Histogram(metricResyncKeys, metric.WithUnit("{key}"),
		metric.WithDescription("Keys a resync found needing work, by trigger: ping, cold_start, burst or takeover"))
	in.resyncDuration, _ = m.Float64Histogram(metricResyncDuration, metric.WithUnit("s"),
		metric.WithDescription("Time a resync took to list what needs work, by trigger"))
	in.coldStarts, _ = m.Int64Counter(metricColdStarts, metric.WithUnit("{start}"),
		metric.WithDescription("Starts of the process: each is a cold start of the Knative Service"))
	return &in
}

// event records an answered event.
func (in *instruments) event(ctx context.Context, typ, outcome string, took time.Duration) {
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("type", typ), attribute.String("outcome", outcome)))
	in.events.Add(ctx, 1, attrs)
	in.eventDuration.Record(ctx, took.Seconds(), attrs)
}

// reconcile records a reconcile's outcome.
func (in *instruments) reconcile(ctx context.Context, err error) {
	outcome := "success"
	switch {
	case err == nil:
	case controller.IsPermanentError(err):
		outcome = "permanent_error"
	case controller.IsSkipKey(err):
		outcome = "skipped"
	default:
		if ok, _ := controller.IsRequeueKey(err); !ok {
			outcome = "error"
		}
	}
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", outcome)))
	in.reconciles.Add(ctx, 1, attrs)
}

// resync records a resync's listing.
func (in *instruments) resync(ctx context.Context, trigger string, keys int, took time.Duration) {
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("trigger", trigger)))
	in.resyncKeys.Record(ctx, int64(keys), attrs)
	in.resyncDuration.Record(ctx, took.Seconds(), attrs)
}

// eventTypeAttr bounds an event type for the type attribute: the types the
// sources send, else "other" ("" when none was read).
func eventTypeAttr(typ string) string {
	if _, ok := verbs[typ]; ok || typ == PingEventType || typ == "" {
		return typ
	}
	return "other"
}

// outcomeOf names an answer's outcome by its status code.
func outcomeOf(code int, queued bool) string {
	switch {
	case code == http.StatusOK:
		return OutcomeReconciled
	case code == http.StatusAccepted && queued:
		return OutcomeQueued
	case code < 300:
		return OutcomeIgnored
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return OutcomeDenied
	case code < 500:
		return OutcomeBad
	default:
		return OutcomeUnavailable
	}
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
