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

package knative

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	"github.com/frugal-operator/foo-operator/pkg/serverless/requeue"
	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// 6. A Foo refused a name that a foreign Deployment held gets its Deployment
// once that one is gone, although no event reports it (the Deployments
// source sees only Deployments a Foo owns) and the reconciler is at zero:
// its reconcile asked to be run again a minute later, and the library keeps
// that in the PingSource foo-reconciler-requeue, whose ping wakes it. The
// resync's PingSource is set to fire once a year meanwhile: nothing else
// wakes the reconciler.
func TestARefusedFooIsTriedAgainFromZero(t *testing.T) {
	ctx := context.Background()
	quiet(t)
	setResyncSchedule(t, "0 0 1 1 *")
	ns := namespace(t)
	theirs := resources.MakeDeployment(newFoo(ns, "x", "taken", 0))
	theirs.OwnerReferences = nil
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createFoo(t, newFoo(ns, "late", "taken", 1))
	refused := waitRefused(t, ns, "late")
	keptForRequeue(t, time.Minute, ns+"/late")
	if err := kube.AppsV1().Deployments(ns).Delete(ctx, "taken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	atZero(t, system, service)
	zero := time.Now().Truncate(time.Second)
	if _, err := kube.AppsV1().Deployments(ns).Get(ctx, "taken", metav1.GetOptions{}); !apierrs.IsNotFound(err) {
		t.Fatalf("the Foo's Deployment before the reconciler was at zero (%v): the workqueue's own requeue ran it, nothing is proved", err)
	}

	woke := nextPod(t, zero, 4*time.Minute)
	// Pinged at the first minute when the key is due (a minute after the
	// refusal), give or take the Foo's own status write and the ping's
	// delivery.
	if due := refused.Add(foo.RefusedRetryMin).Truncate(time.Minute); woke.Before(due) || woke.After(due.Add(2*time.Minute+30*time.Second)) {
		t.Errorf("the reconciler woke at %v; refused at %v, due at the minute after %v", woke, refused, refused.Add(foo.RefusedRetryMin))
	}
	clustertest.Eventually(t, 2*time.Minute, "the Foo's own Deployment", func(ctx context.Context) (bool, string) {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "taken", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(d.OwnerReferences) == 1 && d.OwnerReferences[0].Name == "late", fmt.Sprintf("owners %v", d.OwnerReferences)
	})
	available(t, ns, "late", 1)
	requeueScheduleGone(t)
}

// keptForRequeue waits until the requeue schedule holds every key and is
// Ready.
func keptForRequeue(t *testing.T, timeout time.Duration, keys ...string) {
	t.Helper()
	clustertest.Eventually(t, timeout, "kept in the requeue schedule, which is Ready", func(ctx context.Context) (bool, string) {
		u, err := dyn.Resource(pingGVR).Namespace(system).Get(ctx, requeueSchedule, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, key := range keys {
			if !strings.Contains(u.GetAnnotations()[requeue.Annotation], `"`+key+`"`) {
				return false, key + " missing from " + u.GetAnnotations()[requeue.Annotation]
			}
		}
		return ready(ctx, pingGVR, system, requeueSchedule)
	})
}

// requeueScheduleGone waits until the requeue schedule is deleted, as it is
// with its last key.
func requeueScheduleGone(t *testing.T) {
	t.Helper()
	clustertest.Eventually(t, time.Minute, "the requeue schedule deleted with its last key", func(ctx context.Context) (bool, string) {
		u, err := dyn.Resource(pingGVR).Namespace(system).Get(ctx, requeueSchedule, metav1.GetOptions{})
		if apierrs.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, "keys " + u.GetAnnotations()[requeue.Annotation]
	})
}

// 7. At zero, the PingSource's event wakes the reconciler, and it resyncs:
// it lists the Foos. The resync restores what no event reports (the
// loopback suite's resync tests show what); nothing is to be restored here.
// Its schedule is hourly (config/600-sources.yaml): the test sets every 2
// minutes.
func TestPingWakesAndResyncs(t *testing.T) {
	quiet(t)
	setResyncSchedule(t, "*/2 * * * *")
	atZero(t, system, service)
	zero := time.Now().Truncate(time.Second)
	st, err := os.Stat(auditLog)
	if err != nil {
		t.Fatal(err)
	}

	// The next pod is the ping's: it starts at a 2-minute mark.
	woke := nextPod(t, zero, 3*time.Minute)
	if since := woke.Sub(woke.Truncate(2 * time.Minute)); since > 30*time.Second {
		t.Errorf("the reconciler woke at %v, %v after a ping's 2-minute mark: not woken by the ping", woke, since)
	}
	clustertest.Eventually(t, 2*time.Minute, "the woken reconciler lists the Foos", func(context.Context) (bool, string) {
		events, _, err := controlplane.ReadAuditLog(auditLog, st.Size(), "system:serviceaccount:"+system+":"+service, foo.AgentName)
		if err != nil {
			return false, err.Error()
		}
		for _, e := range events {
			if e.ObjectRef != nil && e.ObjectRef.Namespace == "" && e.Request() == "list samplecontroller.knative.io/foos" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d requests since %v, no LIST of the Foos", len(events), zero)
	})
}

// requeueSchedule is the Foo reconciler's requeue schedule (pkg/serverless/requeue).
const requeueSchedule = service + "-requeue"

// quiet waits until nothing else may wake the reconciler: earlier tests'
// namespaces (but those kept), and the events their deletion makes, are gone.
func quiet(t *testing.T, kept ...string) {
	t.Helper()
	clustertest.Eventually(t, 3*time.Minute, "earlier tests' namespaces gone", func(ctx context.Context) (bool, string) {
		nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, n := range nss.Items {
			if strings.HasPrefix(n.Name, "knative-e2e-") && !slices.Contains(kept, n.Name) {
				return false, n.Name + " is " + string(n.Status.Phase)
			}
		}
		return true, ""
	})
	// The keys of those namespaces' refused Foos leave it at their time,
	// each woken by the schedule's ping.
	clustertest.Eventually(t, 6*time.Minute, "the requeue schedule empty, and gone", func(ctx context.Context) (bool, string) {
		u, err := dyn.Resource(pingGVR).Namespace(system).Get(ctx, requeueSchedule, metav1.GetOptions{})
		if apierrs.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, "keys " + u.GetAnnotations()[requeue.Annotation]
	})
}

// setResyncSchedule sets the resync PingSource's schedule for the test.
func setResyncSchedule(t *testing.T, schedule string) {
	t.Helper()
	set := func(schedule string) error {
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"schedule": schedule}})
		_, err := dyn.Resource(pingGVR).Namespace(system).Patch(context.Background(), "foo-resync", types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}
	u, err := dyn.Resource(pingGVR).Namespace(system).Get(context.Background(), "foo-resync", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	was, _, _ := unstructured.NestedString(u.Object, "spec", "schedule")
	if err := set(schedule); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set(was); err != nil {
			t.Error(err)
		}
	})
}

// waitRefused waits until the Foo reports that its Deployment's name is
// taken, and returns when it was first refused.
func waitRefused(t *testing.T, ns, name string) time.Time {
	t.Helper()
	var at time.Time
	clustertest.Eventually(t, 2*time.Minute, "the Foo is refused the name", func(ctx context.Context) (bool, string) {
		f, err := foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := f.Status.GetCondition(samplesv1alpha1.FooConditionDeploymentReady)
		if f.Status.ObservedGeneration != f.Generation || c == nil || c.Reason != samplesv1alpha1.ReasonDeploymentNotOwned {
			return false, fmt.Sprintf("%+v", f.Status)
		}
		at = c.LastTransitionTime.Inner.Time
		return true, ""
	})
	return at
}

// nextPod waits for the first reconciler pod made since (to the second: a
// pod's creationTimestamp has no finer grain), and returns when it was made.
func nextPod(t *testing.T, since time.Time, timeout time.Duration) time.Time {
	t.Helper()
	since = since.Truncate(time.Second)
	var woke time.Time
	clustertest.Eventually(t, timeout, "a new reconciler pod", func(ctx context.Context) (bool, string) {
		pods, err := kube.CoreV1().Pods(system).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=" + service})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if !p.CreationTimestamp.Before(&metav1.Time{Time: since}) {
				woke = p.CreationTimestamp.Time
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pods, none since %v", len(pods.Items), since)
	})
	return woke
}
