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

package localenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/frugal-operator/foo-operator/pkg/serverless/requeue"
	"github.com/frugal-operator/foo-operator/test/clustertest"
)

// Schedule returns the reconciler's requeue schedule, the PingSource
// <K_SERVICE>-requeue of the operator's namespace: its name and a client of
// its resource.
func (e *Env) Schedule() (string, dynamic.ResourceInterface) {
	return e.Operator.Name + "-requeue", dynamic.NewForConfigOrDie(e.Config).Resource(requeue.Resource).Namespace(e.Operator.Namespace)
}

// Scheduled returns every key of the requeue schedule, with the time it is
// due (none if there is no schedule).
func (e *Env) Scheduled(ctx context.Context) (map[string]time.Time, error) {
	name, client := e.Schedule()
	u, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrs.IsNotFound(err) {
		return map[string]time.Time{}, nil
	}
	if err != nil {
		return nil, err
	}
	var all map[string]time.Time
	return all, json.Unmarshal([]byte(u.GetAnnotations()[requeue.Annotation]), &all)
}

// ScheduledIn returns the keys of namespace ns in the requeue schedule.
func (e *Env) ScheduledIn(ctx context.Context, ns string) (map[string]time.Time, error) {
	all, err := e.Scheduled(ctx)
	mine := map[string]time.Time{}
	for k, at := range all {
		if strings.HasPrefix(k, ns+"/") {
			mine[k] = at
		}
	}
	return mine, err
}

// FailuresOutliveTheReconciler checks that objects whose reconciles fail
// when the reconciler goes (as at zero) are scheduled requeue.Retry later,
// and leave the schedule once they succeed: in namespace ns, it makes each
// of names (create) while the API server refuses what they need (a quota
// lifted by lift), waits for its reconcile to fail and stops the reconciler,
// starting it again for the next; then it lifts the quota, starts the
// reconciler and waits until each converged (converged) and the schedule
// holds none of them. Before the quota is lifted, the last name's retry
// comes and fails again: it then waits twice requeue.Retry. Two names or
// more write the schedule every way: made, updated, deleted.
func (e *Env) FailuresOutliveTheReconciler(t *testing.T, ns string, names []string, create func(name string), lift func(), converged func(name string)) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() {
		if e.Reconciler() == nil {
			if err := e.StartReconciler(context.Background()); err != nil {
				t.Error(err)
			}
		}
	})
	for i, name := range names {
		if i > 0 {
			if err := e.StartReconciler(ctx); err != nil {
				t.Fatal(err)
			}
		}
		create(name)
		clustertest.Eventually(t, time.Minute, name+"'s reconcile failed", func(ctx context.Context) (bool, string) {
			return clustertest.ReconcileFailed(ctx, e.Kube, ns, name)
		})
		if got, err := e.ScheduledIn(ctx, ns); err != nil || len(got) != i {
			t.Fatalf("scheduled while the reconciler lives: %v, %v; want the %d before", got, err, i)
		}
		e.stopAndCheckScheduled(t, ns, name, requeue.Retry)
	}
	e.failsAgainAtItsPing(t, ns, names[len(names)-1])
	lift()
	if err := e.StartReconciler(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		converged(name)
	}
	clustertest.Eventually(t, time.Minute, "all done with", func(ctx context.Context) (bool, string) {
		got, err := e.ScheduledIn(ctx, ns)
		return err == nil && len(got) == 0, fmt.Sprintf("scheduled %v, %v", got, err)
	})
}

// failsAgainAtItsPing checks that a key of the schedule (ns/name, failed
// once) whose reconcile fails again at its time waits twice requeue.Retry:
// with the reconciler stopped, it makes the key due now (as at its ping),
// starts the reconciler (its cold-start resync runs the keys due), waits
// for a new failure, and stops it.
func (e *Env) failsAgainAtItsPing(t *testing.T, ns, name string) {
	t.Helper()
	ctx, key := context.Background(), ns+"/"+name
	schedule, client := e.Schedule()
	u, err := client.Get(ctx, schedule, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]time.Time
	if err := json.Unmarshal([]byte(u.GetAnnotations()[requeue.Annotation]), &keys); err != nil {
		t.Fatal(err)
	}
	if n := failures(t, u); n[key] != 1 {
		t.Fatalf("failures %v, want %s once", n, key)
	}
	keys[key] = time.Now().Add(-time.Second).UTC()
	b, _ := json.Marshal(keys)
	annotations := u.GetAnnotations()
	annotations[requeue.Annotation] = string(b)
	u.SetAnnotations(annotations)
	if _, err := client.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	failed := func(ctx context.Context) (int32, error) {
		events, err := e.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=InternalError"})
		if err != nil {
			return 0, err
		}
		var n int32
		for _, ev := range events.Items {
			n += max(ev.Count, 1)
		}
		return n, nil
	}
	before, err := failed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.StartReconciler(ctx); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, time.Minute, name+"'s reconcile failed again", func(ctx context.Context) (bool, string) {
		n, err := failed(ctx)
		return err == nil && n > before, fmt.Sprintf("%d InternalError events, %v", n, err)
	})
	e.stopAndCheckScheduled(t, ns, name, 2*requeue.Retry)
	if u, err = client.Get(ctx, schedule, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := failures(t, u); n[key] != 2 {
		t.Fatalf("failures %v, want %s twice", n, key)
	}
}

// failures returns the schedule's count of failures by key.
func failures(t *testing.T, schedule *unstructured.Unstructured) map[string]int {
	t.Helper()
	var n map[string]int
	if err := json.Unmarshal([]byte(schedule.GetAnnotations()[requeue.Failures]), &n); err != nil {
		t.Fatalf("annotation %s: %v", requeue.Failures, err)
	}
	return n
}

// stopAndCheckScheduled stops the reconciler and checks that it scheduled
// ns/name about after from then.
func (e *Env) stopAndCheckScheduled(t *testing.T, ns, name string, after time.Duration) {
	t.Helper()
	stopped := time.Now()
	if err := e.StopReconciler(); err != nil {
		t.Fatal(err)
	}
	got, err := e.ScheduledIn(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := got[ns+"/"+name]; !ok || at.Before(stopped.Add(after-time.Second)) || at.After(time.Now().Add(after)) {
		t.Fatalf("scheduled %v, want %s about %s after %s", got, name, after, stopped.Format(time.RFC3339))
	}
}
