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

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/pkg/serverless/requeue"
	"github.com/frugal-operator/foo-operator/test/clustertest"
)

// A Foo refused its Deployment's name asks to be run again later, and that
// outlives the process: the key is kept in the requeue schedule, a cold
// start runs the keys due (a refused Foo's dry run alone would not), and
// once no key is left the schedule is deleted. No PingSource adapter runs
// here: the time is made to pass by hand, and the pings are sent.
func TestARequeueOutlivesTheReconciler(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	t.Cleanup(func() {
		if env.Reconciler() == nil {
			if err := env.StartReconciler(context.Background()); err != nil {
				t.Error(err)
			}
		}
	})
	schedule, pingSources := env.Schedule()
	keys := func(ctx context.Context) (map[string]time.Time, error) { return env.ScheduledIn(ctx, ns) }
	// pass makes every key of the schedule due, as the time passing would.
	// It writes only if a key is not due yet: the time passing writes
	// nothing, and a write of the schedule while the reconciler deletes it
	// (no key left) makes that delete conflict and back off.
	pass := func(ctx context.Context) error {
		all, err := env.Scheduled(ctx)
		if err != nil {
			return err
		}
		now, due := time.Now(), true
		for k, at := range all {
			due = due && !at.After(now)
			all[k] = now.Add(-time.Hour).UTC()
		}
		if due {
			return nil
		}
		b, _ := json.Marshal(all)
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{requeue.Annotation: string(b)}}})
		_, err = pingSources.Patch(ctx, schedule, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}

	start := time.Now()
	for _, name := range []string{"one", "two"} {
		if _, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, foreignDeployment(ns, "foreign-"+name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createFoo(t, newFoo(ns, name, "foreign-"+name, 1))
		waitRefused(t, ns, name)
	}
	eventually(t, "both refused Foos scheduled about "+foo.RefusedRetryMin.String()+" later", func(ctx context.Context) (bool, string) {
		got, err := keys(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, name := range []string{"one", "two"} {
			at, ok := got[ns+"/"+name]
			if !ok || at.Before(start.Add(foo.RefusedRetryMin-time.Second)) || at.After(time.Now().Add(foo.RefusedRetryMin)) {
				return false, fmt.Sprintf("scheduled %v", got)
			}
		}
		return true, ""
	})

	// Gone, as at zero; the time passes; a cold start runs the keys due:
	// still refused, they are scheduled again.
	if err := env.StopReconciler(); err != nil {
		t.Fatal(err)
	}
	if err := pass(ctx); err != nil {
		t.Fatal(err)
	}
	restart := time.Now()
	if err := env.StartReconciler(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the cold start ran both keys due, and scheduled them again", func(ctx context.Context) (bool, string) {
		got, err := keys(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, name := range []string{"one", "two"} {
			if at, ok := got[ns+"/"+name]; !ok || at.Before(restart) {
				return false, fmt.Sprintf("scheduled %v", got)
			}
		}
		return true, ""
	})

	// Freed, and the time passes: the ping runs them; done with, they leave
	// the schedule, and the schedule goes with its last key (those of
	// earlier tests, whose namespaces are gone, are done with too).
	for _, name := range []string{"one", "two"} {
		if err := env.Kube.AppsV1().Deployments(ns).Delete(ctx, "foreign-"+name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "no key left, the schedule deleted", func(ctx context.Context) (bool, string) {
		if _, err := pingSources.Get(ctx, schedule, metav1.GetOptions{}); apierrs.IsNotFound(err) {
			return true, ""
		} else if err != nil {
			return false, err.Error()
		}
		if err := pass(ctx); apierrs.IsNotFound(err) {
			return true, ""
		} else if err != nil {
			return false, err.Error()
		}
		if code, err := env.Resync(ctx); err != nil || code != 200 {
			return false, fmt.Sprintf("ping answered %d, %v", code, err)
		}
		got, err := keys(ctx)
		return false, fmt.Sprintf("scheduled %v, %v", got, err)
	})
	for _, name := range []string{"one", "two"} {
		convergedFoo(t, ns, name)
	}
}

// Foos whose reconciles fail (a quota refuses their Deployments) when the
// reconciler goes, as at zero, are run again requeue.Retry later: the
// adapter gave up on their events, and the workqueue's retries went with the
// process.
func TestAFailureOutlivesTheReconciler(t *testing.T) {
	ns := namespace(t)
	lift := clustertest.NoRoomFor(t, env.Kube, ns, "count/deployments.apps", func(ctx context.Context) error {
		_, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, foreignDeployment(ns, "probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	env.FailuresOutliveTheReconciler(t, ns, []string{"one", "two"},
		func(name string) { createFoo(t, newFoo(ns, name, name, 1)) },
		lift,
		func(name string) { convergedFoo(t, ns, name) })
}
