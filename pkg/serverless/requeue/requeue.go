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

package requeue

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/logging"
)

// Resource is the PingSources' resource (sources.knative.dev/v1).
var Resource = schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1", Resource: "pingsources"}

// Annotation holds the keys of the schedule's PingSource, as a JSON object
// from "<namespace>/<name>" to the RFC 3339 time the key is due.
const Annotation = "serverless.frugal-operator.dev/requeue"

// Failures holds, for each key of the schedule whose reconciles failed
// when the pod went (see Retry), a JSON object from "<namespace>/<name>" to
// how many pods in a row saw its last reconcile fail: the key's next retry
// waits twice as long as its last.
const Failures = "serverless.frugal-operator.dev/requeue-failures"

// Early is how much before its time a key may run: a ping fires at the
// minute, so a key due within the next minute runs with it rather than a
// minute later (and a ping a little early, by the clocks, still finds it).
const Early = time.Minute

// Schedule is the keys to run again later, kept in one PingSource.
type Schedule struct {
	client  dynamic.ResourceInterface
	name    string
	service string
	now     func() time.Time

	mu sync.Mutex
	// stored is the PingSource's keys as last read or written, at version,
	// if it exists.
	stored  map[types.NamespacedName]due
	exists  bool
	version string
	// changes are those not written yet: a time, or the zero time for a key
	// done with.
	changes map[types.NamespacedName]due
	changed chan struct{}
	// failed are the keys whose last reconcile failed.
	failed map[types.NamespacedName]bool
}

// due is when a key runs again, and how many pods in a row saw its last
// reconcile fail (0: a requeue asked for it).
type due struct {
	at       time.Time
	failures int
}

func (d due) equal(o due) bool { return d.at.Equal(o.at) && d.failures == o.failures }

// New returns the schedule kept in the PingSource name of client's
// namespace, which pings the Knative Service service of that namespace.
// Load it before use.
func New(client dynamic.ResourceInterface, name, service string) *Schedule {
	return &Schedule{client: client, name: name, service: service, now: time.Now,
		stored: map[types.NamespacedName]due{}, changes: map[types.NamespacedName]due{}, changed: make(chan struct{}, 1),
		failed: map[types.NamespacedName]bool{}}
}

// Load reads the PingSource; there may be none.
func (s *Schedule) Load(ctx context.Context) error {
	u, err := s.client.Get(ctx, s.name, metav1.GetOptions{})
	if apierrs.IsNotFound(err) {
		u, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("failed to read pingsource %s: %w", s.name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stored, s.exists, s.version = map[types.NamespacedName]due{}, u != nil, ""
	if u == nil {
		return nil
	}
	s.version = u.GetResourceVersion()
	var keys map[string]time.Time
	if err := json.Unmarshal([]byte(u.GetAnnotations()[Annotation]), &keys); err != nil {
		// Written by hand: what it held is lost, the resyncs bound it.
		logging.FromContext(ctx).Warnw("Ignoring the requeue schedule's keys", zap.String("pingsource", s.name), zap.Error(err))
	}
	var failures map[string]int
	if f, ok := u.GetAnnotations()[Failures]; ok {
		if err := json.Unmarshal([]byte(f), &failures); err != nil {
			// Written by hand: the keys' next retries wait Retry.
			logging.FromContext(ctx).Warnw("Ignoring the requeue schedule's failures", zap.String("pingsource", s.name), zap.Error(err))
		}
	}
	for k, at := range keys {
		if ns, name, err := cache.SplitMetaNamespaceKey(k); err == nil && name != "" {
			s.stored[types.NamespacedName{Namespace: ns, Name: name}] = due{at: at, failures: max(failures[k], 0)}
		}
	}
	return nil
}

// Retry is how long after the process ends a key whose last reconcile
// failed runs again, unless it is due sooner: while the process lives the
// workqueue retries it, and the adapter gives up on an event after a few
// seconds. A key whose reconcile fails again when that pod goes waits twice
// as long, and so on up to MaxRetry: a key that keeps failing (a quota
// full, a webhook down) wakes the Service after 5, 10, 20 and 40 minutes,
// then every hour, until it succeeds.
const Retry = 5 * time.Minute

// MaxRetry bounds the wait between the retries of a key that keeps failing.
const MaxRetry = time.Hour

// retryAfter is how long the retry of a key waits when failures pods in a
// row (1 or more) saw its last reconcile fail.
func retryAfter(failures int) time.Duration {
	d := Retry
	for i := 1; i < failures && d < MaxRetry; i++ {
		d *= 2
	}
	return min(d, MaxRetry)
}

// Reconciled records the outcome of a reconcile of key: a requeue after a
// delay (controller.NewRequeueAfter) schedules the key then; a failure (an
// error neither permanent nor a requeue) is held, and scheduled when Run
// ends (see Retry) if no reconcile of the key succeeded meanwhile; a success
// or a permanent error is done with it.
func (s *Schedule) Reconciled(key string, err error) {
	ns, name, kerr := cache.SplitMetaNamespaceKey(key)
	if kerr != nil {
		return
	}
	if controller.IsSkipKey(err) {
		// Not reconciled here (not the key's leader): no outcome.
		return
	}
	k := types.NamespacedName{Namespace: ns, Name: name}
	var at time.Time // done with (and with its failures)
	requeue, after := controller.IsRequeueKey(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case requeue && after > 0:
		at = s.now().Add(after).Truncate(time.Second)
	case err != nil && !requeue && !controller.IsPermanentError(err):
		// Written only at the end: most failures (conflicts) are gone at
		// the next try, and a container that crashes is started again, with
		// its cold-start resync.
		s.failed[k] = true
		return
	}
	delete(s.failed, k)
	s.set(k, due{at: at})
}

// set schedules key at d.at, or is done with it if that is zero. Callers
// hold s.mu.
func (s *Schedule) set(k types.NamespacedName, d due) {
	if was, ok := s.lookup(k); (ok && d.equal(was)) || (!ok && d.at.IsZero()) {
		return
	}
	s.changes[k] = d
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// holdFailed schedules the keys whose last reconcile failed (see Retry),
// unless they are due sooner.
func (s *Schedule) holdFailed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k := range s.failed {
		was, ok := s.lookup(k)
		next := due{failures: was.failures + 1}
		next.at = now.Add(retryAfter(next.failures)).Truncate(time.Second)
		if !ok || !was.at.After(now) || was.at.After(next.at) {
			s.set(k, next)
		}
	}
	clear(s.failed)
}

// lookup returns when key is due, if it is scheduled. Callers hold s.mu.
func (s *Schedule) lookup(k types.NamespacedName) (due, bool) {
	d, ok := s.changes[k]
	if !ok {
		d, ok = s.stored[k]
	}
	if !ok || d.at.IsZero() {
		return due{}, false
	}
	return d, true
}

// keys returns every key scheduled, with when it is due. Callers hold s.mu.
func (s *Schedule) keys() map[types.NamespacedName]due {
	all := maps.Clone(s.stored)
	for k, d := range s.changes {
		if d.at.IsZero() {
			delete(all, k)
		} else {
			all[k] = d
		}
	}
	return all
}

// Due returns the keys due by now (or within Early of it), sorted.
func (s *Schedule) Due() []types.NamespacedName {
	by := s.now().Add(Early)
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []types.NamespacedName
	for k, d := range s.keys() {
		if !d.at.After(by) {
			due = append(due, k)
		}
	}
	slices.SortFunc(due, func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return due
}

// Lister returns next (a resync's lister) with the keys due added to the
// work it returns when it lists every namespace. It reads the PingSource
// again first (a pod of another revision may have written it); if that
// fails, the keys it knows do. A resync of some namespaces only (a burst's)
// is next's alone: the keys due run with the next resync of them all.
func (s *Schedule) Lister(next func(ctx context.Context, namespaces ...string) (work, refused []types.NamespacedName, err error)) func(ctx context.Context, namespaces ...string) (work, refused []types.NamespacedName, err error) {
	return func(ctx context.Context, namespaces ...string) ([]types.NamespacedName, []types.NamespacedName, error) {
		work, refused, err := next(ctx, namespaces...)
		if err != nil {
			return nil, nil, err
		}
		if len(namespaces) > 0 {
			return work, refused, nil
		}
		if err := s.Load(ctx); err != nil {
			logging.FromContext(ctx).Warnw("Failed to read the requeue schedule again", zap.Error(err))
		}
		listed := make(map[types.NamespacedName]bool, len(work))
		for _, k := range work {
			listed[k] = true
		}
		for _, k := range s.Due() {
			if !listed[k] {
				work = append(work, k)
			}
		}
		return work, refused, nil
	}
}

// Run writes the schedule whenever it changes, retrying failures with
// backoff, until ctx is done; then it schedules the keys whose last
// reconcile failed and writes what is left once more, within flushTimeout.
// Stop it once no reconcile runs any more.
func (s *Schedule) Run(ctx context.Context) {
	logger := logging.FromContext(ctx)
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 7, Cap: 30 * time.Second}
	for {
		select {
		case <-s.changed:
		case <-ctx.Done():
			s.holdFailed()
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
			defer cancel()
			_ = wait.ExponentialBackoffWithContext(flushCtx, backoff, func(ctx context.Context) (bool, error) {
				return s.logged(logger, s.write(ctx)), nil
			})
			return
		}
		_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
			return s.logged(logger, s.write(ctx)), nil
		})
	}
}

// flushTimeout bounds the last write, at shutdown.
const flushTimeout = 5 * time.Second

func (s *Schedule) logged(logger *zap.SugaredLogger, err error) bool {
	if err != nil {
		logger.Warnw("Failed to write the requeue schedule", zap.String("pingsource", s.name), zap.Error(err))
	}
	return err == nil
}

// write writes the changes, if any: it makes, updates or deletes the
// PingSource. On a conflict it reads the PingSource again (a pod of another
// revision may have written it) and fails: the next try merges the changes
// into what it read.
func (s *Schedule) write(ctx context.Context) error {
	s.mu.Lock()
	if len(s.changes) == 0 {
		s.mu.Unlock()
		return nil
	}
	written, keys, exists, version := maps.Clone(s.changes), s.keys(), s.exists, s.version
	s.mu.Unlock()

	var err error
	switch {
	case len(keys) == 0 && !exists:
	case len(keys) == 0:
		opts := metav1.DeleteOptions{}
		if version != "" {
			opts.Preconditions = &metav1.Preconditions{ResourceVersion: &version}
		}
		err = s.client.Delete(ctx, s.name, opts)
		if apierrs.IsNotFound(err) {
			err = nil
		}
		exists, version = false, ""
	default:
		var u *unstructured.Unstructured
		obj := s.object(keys, version)
		if !exists {
			u, err = s.client.Create(ctx, obj, metav1.CreateOptions{})
		} else {
			u, err = s.client.Update(ctx, obj, metav1.UpdateOptions{})
		}
		if err == nil {
			exists, version = true, u.GetResourceVersion()
		}
	}
	if apierrs.IsConflict(err) || apierrs.IsAlreadyExists(err) || apierrs.IsNotFound(err) {
		if lerr := s.Load(ctx); lerr != nil {
			return lerr
		}
		return fmt.Errorf("pingsource %s changed meanwhile: %w", s.name, err)
	}
	if err != nil {
		return fmt.Errorf("failed to write pingsource %s: %w", s.name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exists, s.version = exists, version
	for k, d := range written {
		if d.at.IsZero() {
			delete(s.stored, k)
		} else {
			s.stored[k] = d
		}
		if now, ok := s.changes[k]; ok && now.equal(d) {
			delete(s.changes, k)
		}
	}
	return nil
}

// object is the PingSource that pings the service at the minute the first
// of keys is due, holding them all.
func (s *Schedule) object(keys map[types.NamespacedName]due, version string) *unstructured.Unstructured {
	held := make(map[string]time.Time, len(keys))
	failures := map[string]int{}
	first := time.Time{}
	for k, d := range keys {
		held[k.String()] = d.at.UTC()
		if d.failures > 0 {
			failures[k.String()] = d.failures
		}
		if first.IsZero() || d.at.Before(first) {
			first = d.at
		}
	}
	b, _ := json.Marshal(held)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sources.knative.dev/v1",
		"kind":       "PingSource",
		"metadata":   map[string]any{"name": s.name},
		"spec": map[string]any{
			"schedule":    Cron(first, s.now()),
			"timezone":    "UTC",
			"contentType": "application/json",
			"data":        `{"requeue":true}`,
			"sink": map[string]any{"ref": map[string]any{
				"apiVersion": "serving.knative.dev/v1", "kind": "Service", "name": s.service,
			}},
		},
	}}
	annotations := map[string]string{Annotation: string(b)}
	if len(failures) > 0 {
		f, _ := json.Marshal(failures)
		annotations[Failures] = string(f)
	}
	u.SetAnnotations(annotations)
	u.SetResourceVersion(version)
	return u
}

// Cron returns the schedule (UTC) of a ping at the first minute not before
// at and after now: a key overdue is pinged at the next minute.
func Cron(at, now time.Time) string {
	t := at.UTC()
	if m := t.Truncate(time.Minute); m.Before(t) {
		t = m.Add(time.Minute)
	}
	if next := now.UTC().Truncate(time.Minute).Add(time.Minute); t.Before(next) {
		t = next
	}
	return fmt.Sprintf("%d %d %d %d *", t.Minute(), t.Hour(), t.Day(), int(t.Month()))
}
