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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clientgotesting "k8s.io/client-go/testing"
	"knative.dev/pkg/controller"
)

const ns = "operator"

var start = time.Date(2026, 12, 1, 18, 20, 30, 0, time.UTC)

func newSchedule(t *testing.T, objs ...runtime.Object) (*Schedule, *dynamicfake.FakeDynamicClient, *time.Time) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{Resource: "PingSourceList"}, objs...)
	s := New(client.Resource(Resource).Namespace(ns), "op-requeue", "op")
	now := start
	s.now = func() time.Time { return now }
	if err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, client, &now
}

// flush runs the schedule's writer until it has written every change.
func flush(t *testing.T, s *Schedule) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Run writes what is left, then returns.
	s.Run(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.changes) != 0 {
		t.Fatalf("changes left unwritten: %v", s.changes)
	}
}

func get(t *testing.T, client *dynamicfake.FakeDynamicClient) (*unstructured.Unstructured, map[string]time.Time) {
	t.Helper()
	u, err := client.Resource(Resource).Namespace(ns).Get(context.Background(), "op-requeue", metav1.GetOptions{})
	if apierrs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]time.Time
	if err := json.Unmarshal([]byte(u.GetAnnotations()[Annotation]), &keys); err != nil {
		t.Fatalf("annotation %q: %v", u.GetAnnotations()[Annotation], err)
	}
	return u, keys
}

func pingSource(keys map[string]time.Time) *unstructured.Unstructured {
	b, _ := json.Marshal(keys)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sources.knative.dev/v1", "kind": "PingSource",
		"metadata": map[string]any{"name": "op-requeue", "namespace": ns, "resourceVersion": "1"},
		"spec":     map[string]any{"schedule": "0 0 1 1 *"},
	}}
	u.SetAnnotations(map[string]string{Annotation: string(b)})
	return u
}

func TestARequeueAfterIsWrittenAndPingsTheService(t *testing.T) {
	s, client, _ := newSchedule(t)
	s.Reconciled("a/one", controller.NewRequeueAfter(90*time.Second))
	flush(t, s)

	u, keys := get(t, client)
	if u == nil {
		t.Fatal("no PingSource made")
	}
	if diff := cmp.Diff(map[string]time.Time{"a/one": start.Add(90 * time.Second)}, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	want := map[string]any{
		// 18:22:00, the first minute not before 18:22:00.
		"schedule": "22 18 1 12 *", "timezone": "UTC",
		"contentType": "application/json", "data": `{"requeue":true}`,
		"sink": map[string]any{"ref": map[string]any{"apiVersion": "serving.knative.dev/v1", "kind": "Service", "name": "op"}},
	}
	if diff := cmp.Diff(want, spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}

	// A second key, due earlier, moves the ping; the first key done with
	// leaves the second.
	s.Reconciled("b/two", controller.NewRequeueAfter(10*time.Second))
	s.Reconciled("a/one", nil)
	flush(t, s)
	u, keys = get(t, client)
	if diff := cmp.Diff(map[string]time.Time{"b/two": start.Add(10 * time.Second)}, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	if sched, _, _ := unstructured.NestedString(u.Object, "spec", "schedule"); sched != "21 18 1 12 *" {
		t.Errorf("schedule %q, want 21 18 1 12 *", sched)
	}

	// The last key done with: the PingSource goes.
	s.Reconciled("b/two", controller.NewPermanentError(errors.New("refused")))
	flush(t, s)
	if u, _ := get(t, client); u != nil {
		t.Errorf("PingSource %v left with no key", u.GetAnnotations())
	}
}

func TestOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool // still scheduled
	}{
		{"success", nil, false},
		{"permanent error", controller.NewPermanentError(errors.New("no")), false},
		{"requeue at once", controller.NewRequeueImmediately(), false},
		{"failure", errors.New("timeout"), true},
		{"requeue later", controller.NewRequeueAfter(time.Hour), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := newSchedule(t, pingSource(map[string]time.Time{"a/one": start}))
			s.Reconciled("a/one", tc.err)
			if got := len(s.keys()) == 1; got != tc.want {
				t.Errorf("scheduled after %v: %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestTheKeysDueRunWithTheResync(t *testing.T) {
	s, _, now := newSchedule(t, pingSource(map[string]time.Time{
		"a/overdue":       start.Add(-time.Hour),
		"a/in-30s":        start.Add(30 * time.Second),
		"b/in-2m":         start.Add(2 * time.Minute),
		"a/listed-anyway": start,
	}))
	resync := func(context.Context, ...string) (work, refused []types.NamespacedName, err error) {
		return []types.NamespacedName{{Namespace: "a", Name: "listed-anyway"}}, []types.NamespacedName{{Namespace: "c", Name: "refused"}}, nil
	}
	work, refused, err := s.Lister(resync)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []types.NamespacedName{{Namespace: "a", Name: "listed-anyway"}, {Namespace: "a", Name: "in-30s"}, {Namespace: "a", Name: "overdue"}}
	if diff := cmp.Diff(want, work); diff != "" {
		t.Errorf("work (-want +got):\n%s", diff)
	}
	if len(refused) != 1 {
		t.Errorf("refused %v, want the resync's", refused)
	}
	// A resync of some namespaces (a burst's) is the resync's alone.
	work, _, err = s.Lister(resync)(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]types.NamespacedName{{Namespace: "a", Name: "listed-anyway"}}, work); diff != "" {
		t.Errorf("work of namespace a (-want +got):\n%s", diff)
	}
	*now = start.Add(2 * time.Minute)
	if diff := cmp.Diff(4, len(s.Due())); diff != "" {
		t.Errorf("keys due two minutes later (-want +got):\n%s", diff)
	}

	failing := func(context.Context, ...string) (work, refused []types.NamespacedName, err error) {
		return nil, nil, errors.New("list failed")
	}
	if _, _, err := s.Lister(failing)(context.Background()); err == nil {
		t.Error("the resync's error was not returned")
	}
}

// A pod of another revision wrote the PingSource since it was read: the
// write reads it again and merges.
func TestAConflictMergesWhatTheOtherWrote(t *testing.T) {
	s, client, _ := newSchedule(t, pingSource(map[string]time.Time{"a/one": start.Add(time.Hour)}))
	other := pingSource(map[string]time.Time{"a/one": start.Add(time.Hour), "z/other": start.Add(time.Minute)})
	other.SetResourceVersion("2")
	conflicts := 0
	client.PrependReactor("update", "pingsources", func(a clientgotesting.Action) (bool, runtime.Object, error) {
		u := a.(clientgotesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		if u.GetResourceVersion() == "1" {
			conflicts++
			if err := client.Tracker().Update(Resource, other, ns); err != nil {
				t.Fatal(err)
			}
			return true, nil, apierrs.NewConflict(Resource.GroupResource(), "op-requeue", fmt.Errorf("version 1 is old"))
		}
		return false, nil, nil
	})
	s.Reconciled("b/mine", controller.NewRequeueAfter(5*time.Minute))
	s.Reconciled("a/one", nil)
	flush(t, s)
	if conflicts != 1 {
		t.Errorf("%d conflicts, want 1", conflicts)
	}
	_, keys := get(t, client)
	want := map[string]time.Time{"z/other": start.Add(time.Minute), "b/mine": start.Add(5 * time.Minute)}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

// A failed reconcile outlives the process: its key is held while the process
// lives (the workqueue retries it) and scheduled Retry after it ends, unless
// it is due sooner; it is done with once a reconcile succeeds.
func TestAFailedKeyIsRetriedFromZero(t *testing.T) {
	s, client, now := newSchedule(t, pingSource(map[string]time.Time{"a/soon": start.Add(time.Minute), "a/late": start.Add(time.Hour)}))
	failure := errors.New("the API server timed out")
	for _, key := range []string{"a/one", "a/soon", "a/late", "a/fixed"} {
		s.Reconciled(key, failure)
	}
	s.Reconciled("a/fixed", nil)

	// While the process lives, another change is written, not the failures.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	s.Reconciled("b/later", controller.NewRequeueAfter(time.Hour))
	want := map[string]time.Time{"a/soon": start.Add(time.Minute), "a/late": start.Add(time.Hour), "b/later": start.Add(time.Hour)}
	var keys map[string]time.Time
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, keys = get(t, client)
		return len(keys) == len(want), nil
	}); err != nil {
		t.Fatalf("b/later not written: %v", keys)
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Fatalf("keys while the process lives (-want +got):\n%s", diff)
	}

	// The process ends at start+1s.
	*now = start.Add(time.Second)
	cancel()
	<-done
	_, keys = get(t, client)
	end := start.Add(time.Second + Retry)
	want = map[string]time.Time{"a/one": end, "a/soon": start.Add(time.Minute), "a/late": end, "b/later": start.Add(time.Hour)}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys after the end (-want +got):\n%s", diff)
	}

	// Run again later: a/one fails again, the others succeed.
	*now = end
	s.Reconciled("a/one", failure)
	for _, key := range []string{"a/soon", "a/late", "b/later"} {
		s.Reconciled(key, nil)
	}
	flush(t, s)
	_, keys = get(t, client)
	if diff := cmp.Diff(map[string]time.Time{"a/one": end.Add(2 * Retry)}, keys); diff != "" {
		t.Errorf("keys after the second end (-want +got):\n%s", diff)
	}
}

// Each pod in a row that sees a key's reconcile fail makes its next retry
// wait twice as long, up to MaxRetry; the count is kept in the PingSource
// (each pod below reads it anew); a success ends it.
func TestAKeyThatKeepsFailingWaitsLongerEachTime(t *testing.T) {
	_, client, _ := newSchedule(t)
	failure := errors.New("exceeded quota")
	now := start
	pod := func(outcome error) map[string]time.Time {
		t.Helper()
		s := New(client.Resource(Resource).Namespace(ns), "op-requeue", "op")
		s.now = func() time.Time { return now }
		if err := s.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		s.Reconciled("a/broken", outcome)
		flush(t, s)
		_, keys := get(t, client)
		return keys
	}
	for i, wait := range []time.Duration{5 * time.Minute, 10 * time.Minute, 20 * time.Minute, 40 * time.Minute, time.Hour, time.Hour} {
		keys := pod(failure)
		if diff := cmp.Diff(map[string]time.Time{"a/broken": now.Add(wait)}, keys); diff != "" {
			t.Fatalf("after failure %d (-want +got):\n%s", i+1, diff)
		}
		u, _ := get(t, client)
		if got, want := u.GetAnnotations()[Failures], fmt.Sprintf(`{"a/broken":%d}`, i+1); got != want {
			t.Errorf("after failure %d: failures %s, want %s", i+1, got, want)
		}
		now = now.Add(wait) // its ping
	}
	if keys := pod(nil); keys != nil {
		t.Fatalf("after a success: %v, want no schedule", keys)
	}
	if keys := pod(failure); !keys["a/broken"].Equal(now.Add(Retry)) {
		t.Errorf("a new failure after a success: %v, want Retry from now", keys)
	}
}

func TestNothingChangedWritesNothing(t *testing.T) {
	s, client, _ := newSchedule(t)
	s.Reconciled("a/one", nil)
	s.Reconciled("a/two", controller.NewRequeueImmediately())
	s.Reconciled("a/three", errors.New("conflict"))
	s.Reconciled("a/three", nil) // the workqueue's retry
	s.Reconciled("a/four", controller.NewSkipKey("a/four"))
	flush(t, s)
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("unexpected %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestAHandWrittenAnnotationIsIgnored(t *testing.T) {
	u := pingSource(nil)
	u.SetAnnotations(map[string]string{Annotation: "not json"})
	s, client, _ := newSchedule(t, u)
	if len(s.Due()) != 0 {
		t.Errorf("due %v from a bad annotation", s.Due())
	}
	s.Reconciled("a/one", controller.NewRequeueAfter(time.Minute))
	flush(t, s)
	if _, keys := get(t, client); len(keys) != 1 {
		t.Errorf("keys %v, want a/one alone", keys)
	}
}

func TestCron(t *testing.T) {
	now := time.Date(2026, 12, 31, 23, 58, 10, 0, time.UTC)
	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{now.Add(-time.Hour), "59 23 31 12 *"},               // overdue: the next minute
		{now.Add(20 * time.Second), "59 23 31 12 *"},         // 23:58:30 → 23:59
		{now.Add(110 * time.Second), "0 0 1 1 *"},            // 00:00:00 exactly
		{now.Add(111 * time.Second), "1 0 1 1 *"},            // 00:00:01 → 00:01
		{now.In(time.FixedZone("X", 3600)), "59 23 31 12 *"}, // in UTC
	} {
		if got := Cron(tc.at, now); got != tc.want {
			t.Errorf("Cron(%v) = %q, want %q", tc.at, got, tc.want)
		}
	}
}

// What another writer put in the PingSource since it was read runs with the
// next resync.
func TestTheResyncReadsTheScheduleAgain(t *testing.T) {
	s, client, _ := newSchedule(t)
	if err := client.Tracker().Create(Resource, pingSource(map[string]time.Time{"a/theirs": start}), ns); err != nil {
		t.Fatal(err)
	}
	nothing := func(context.Context, ...string) (work, refused []types.NamespacedName, err error) {
		return nil, nil, nil
	}
	work, _, err := s.Lister(nothing)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]types.NamespacedName{{Namespace: "a", Name: "theirs"}}, work); diff != "" {
		t.Errorf("work (-want +got):\n%s", diff)
	}
}
