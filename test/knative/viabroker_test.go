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
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"knative.dev/pkg/ptr"

	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

var (
	brokerGVR  = schema.GroupVersionResource{Group: "eventing.knative.dev", Version: "v1", Resource: "brokers"}
	triggerGVR = schema.GroupVersionResource{Group: "eventing.knative.dev", Version: "v1", Resource: "triggers"}
	sourceGVR  = schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1", Resource: "apiserversources"}
	pingGVR    = schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1", Resource: "pingsources"}
)

const deadLetters = "foo-dead-letters"

// 9. Broker wiring: kubectl apply -f the release's broker file
// (config/broker/) points the same sources at a Broker whose Triggers
// deliver to the reconciler, with retries and a dead-letter sink. It runs
// last: the cluster stays in broker wiring.
func TestBrokerWiring(t *testing.T) {
	// Foos made while the source switches sinks (its adapter rolls out):
	// each converges within 10 s of the new adapter delivering.
	switching := namespace(t)
	const made = 5
	if err := kubectl("apply", "-f", releaseBroker); err != nil {
		t.Fatal("kubectl apply -f", releaseBroker+":", err)
	}
	for i := range made {
		createFoo(t, newFoo(switching, fmt.Sprintf("foo-%d", i), fmt.Sprintf("dep-%d", i), 0))
	}
	clustertest.Eventually(t, 3*time.Minute, "the Broker is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, brokerGVR, system, "operators")
	})
	for _, name := range []string{"foo-reconciler-foos", "foo-reconciler-deployments", "foo-reconciler-sources", "foo-reconciler-resync"} {
		clustertest.Eventually(t, 3*time.Minute, "Trigger "+name+" is Ready", func(ctx context.Context) (bool, string) {
			return ready(ctx, triggerGVR, system, name)
		})
	}
	for _, name := range []string{"foos"} {
		clustertest.Eventually(t, 3*time.Minute, "ApiServerSource "+name+" sends to the Broker", func(ctx context.Context) (bool, string) {
			u, err := dyn.Resource(sourceGVR).Namespace(system).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			sink, _, _ := unstructured.NestedString(u.Object, "status", "sinkUri")
			ok, msg := ready(ctx, sourceGVR, system, name)
			return ok && strings.Contains(sink, "broker-ingress"), fmt.Sprintf("sink %q, %s", sink, msg)
		})
	}
	clustertest.Eventually(t, 3*time.Minute, "the dead-letter sink is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, ksvcGVR, system, deadLetters)
	})
	sourcesDeliver(t, switching)
	delivering := time.Now()
	clustertest.Eventually(t, 2*time.Minute, "the Foos made during the switch converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, switching, made)
	})
	took := time.Since(delivering)
	if took > 10*time.Second {
		t.Errorf("the Foos made during the switch converged %v after the new adapter delivered, want within 10 s", took.Round(time.Millisecond))
	}
	t.Logf("the Foos made during the switch converged %v after the new adapter delivered", took.Round(time.Millisecond))

	t.Run("lifecycle", func(t *testing.T) {
		ns := namespace(t)
		createFoo(t, newFoo(ns, "web", "web", 1))
		available(t, ns, "web", 1)
		patchFoo(t, ns, "web", `{"spec":{"replicas":2}}`)
		available(t, ns, "web", 2)
		if err := kube.AppsV1().Deployments(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		available(t, ns, "web", 2)
	})
	// Before the burst, whose events the broker may still be retrying a
	// while after (the reconciler's pod deleted midway), waking the reconciler.
	t.Run("a wake-up behind a Deployment backlog", func(t *testing.T) { behindADeploymentBacklog(t, switching) })
	t.Run("a burst converges while the reconciler pod is deleted twice", burstWithPodDeletions)
	t.Run("a subscriber that keeps failing dead-letters its events", failingSubscriberDeadLetters)
	t.Run("a malformed event is dead-lettered at once, not retried", malformedEventDeadLettered)
}

func patchFoo(t *testing.T, ns, name, patch string) {
	t.Helper()
	if _, err := foos.SamplecontrollerV1alpha1().Foos(ns).Patch(context.Background(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// burstWithPodDeletions creates 200 Foos while the reconciler's pod is
// deleted twice, without grace: every Foo converges (the broker redelivers
// what the pods did not answer), and nothing reaches the dead-letter sink.
func burstWithPodDeletions(t *testing.T) {
	const n = 200
	ctx := context.Background()
	ns := namespace(t)
	stopWatching := watchDeadLetters(t)

	var created atomic.Int32
	var wg sync.WaitGroup
	work := make(chan int)
	for range 20 {
		wg.Go(func() {
			for i := range work {
				f := newFoo(ns, fmt.Sprintf("foo-%03d", i), fmt.Sprintf("dep-%03d", i), 0)
				if _, err := foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, f, metav1.CreateOptions{}); err != nil {
					t.Error("creating Foo:", err)
				}
				created.Add(1)
			}
		})
	}
	start := time.Now()
	go func() {
		defer close(work)
		for i := range n {
			work <- i
		}
	}()
	for _, after := range []int{n / 3, 2 * n / 3} {
		clustertest.Eventually(t, 3*time.Minute, fmt.Sprintf("%d Deployments made", after), func(ctx context.Context) (bool, string) {
			deps, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(deps.Items) >= after, fmt.Sprintf("%d Deployments", len(deps.Items))
		})
		deleteReconcilerPods(t)
	}
	wg.Wait()
	clustertest.Eventually(t, 5*time.Minute, fmt.Sprintf("%d Foos converged", n), func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, n)
	})
	t.Logf("%d Foos converged %v after the first create, the reconciler's pod deleted twice", n, time.Since(start).Round(time.Millisecond))
	if seen := stopWatching(); len(seen) > 0 {
		t.Errorf("the dead-letter sink was woken during the burst: pods %v", seen)
	}
}

// deleteReconcilerPods deletes the reconciler's running pods at once, with
// no grace: a crash, as far as the events in flight are concerned.
func deleteReconcilerPods(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	pods, err := kube.CoreV1().Pods(system).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=" + service})
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if err := kube.CoreV1().Pods(system).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.Int64(0)}); err != nil {
			t.Fatal(err)
		}
		deleted++
	}
	if deleted == 0 {
		t.Fatal("no reconciler pod to delete in the middle of the burst")
	}
	t.Logf("deleted %d reconciler pod(s)", deleted)
}

// converged reports whether the n Foos of ns have converged.
func converged(ctx context.Context, ns string, n int) (bool, string) {
	return localenv.Converged(ctx, kube, foos, ns, n)
}

// watchDeadLetters records every dead-letter sink pod created from now
// until the returned function is called, which returns their names. The
// sink scales to zero, so an event sent to it makes a pod.
func watchDeadLetters(t *testing.T) func() []string {
	t.Helper()
	atZero(t, deadLetters)
	since := metav1.NewTime(time.Now().Truncate(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	seen := map[string]bool{}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pods, err := kube.CoreV1().Pods(system).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=" + deadLetters})
			if err == nil {
				mu.Lock()
				for _, p := range pods.Items {
					if !p.CreationTimestamp.Before(&since) {
						seen[p.Name] = true
					}
				}
				mu.Unlock()
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	return func() []string {
		cancel()
		<-done
		var names []string
		for name := range seen {
			names = append(names, name)
		}
		return names
	}
}

// deadLettered waits until the dead-letter sink has logged an event whose
// attributes contain every one of want, and returns what it logged of it.
func deadLettered(t *testing.T, within time.Duration, want ...string) string {
	t.Helper()
	var found string
	clustertest.Eventually(t, within, fmt.Sprintf("the dead-letter sink logs an event with %q", want), func(ctx context.Context) (bool, string) {
		pods, err := kube.CoreV1().Pods(system).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=" + deadLetters})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			logs, err := kube.CoreV1().Pods(system).GetLogs(p.Name, &corev1.PodLogOptions{Container: "user-container"}).DoRaw(ctx)
			if err != nil {
				continue
			}
			for _, ev := range strings.Split(string(logs), "cloudevents.Event") {
				if containsAll(ev, want) {
					found = ev
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("%d dead-letter pods, no such event", len(pods.Items))
	})
	return found
}

func containsAll(s string, want []string) bool {
	for _, w := range want {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// failingSubscriberDeadLetters adds a Trigger whose subscriber refuses every
// connection, with one retry: a Foo's event reaches the dead-letter sink.
func failingSubscriberDeadLetters(t *testing.T) {
	ctx := context.Background()
	failing := "http://" + nodeIP + ":1/"
	ns := namespace(t)
	trigger := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "eventing.knative.dev/v1",
		"kind":       "Trigger",
		"metadata":   map[string]any{"name": "always-fails", "namespace": system},
		"spec": map[string]any{
			"broker":  "operators",
			"filters": []any{map[string]any{"exact": map[string]any{"namespace": ns}}},
			// Nothing listens on port 1 of the node.
			"subscriber": map[string]any{"uri": failing},
			// One retry, soon: the broker's own delivery (ten, with backoff)
			// would take minutes to give up.
			"delivery": map[string]any{
				"retry":          int64(1),
				"backoffPolicy":  "linear",
				"backoffDelay":   "PT0.2S",
				"deadLetterSink": map[string]any{"ref": map[string]any{"apiVersion": "serving.knative.dev/v1", "kind": "Service", "name": deadLetters}},
			},
		},
	}}
	if _, err := dyn.Resource(triggerGVR).Namespace(system).Create(ctx, trigger, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(triggerGVR).Namespace(system).Delete(context.Background(), "always-fails", metav1.DeleteOptions{})
	})
	clustertest.Eventually(t, 2*time.Minute, "the failing Trigger is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, triggerGVR, system, "always-fails")
	})
	createFoo(t, newFoo(ns, "doomed", "doomed", 0))
	deadLettered(t, 3*time.Minute, "namespaces/"+ns+"/foos/doomed", "knativeerrordest: "+failing)
	// The reconciler's own Trigger still delivered it.
	available(t, ns, "doomed", 0)
}

// malformedEventDeadLettered posts an event that the reconciler's Trigger
// routes to it but whose data is not a Foo: the reconciler answers 400, which
// the broker does not retry, so the event reaches the dead-letter sink within
// seconds, where ten retries with backoff would take minutes.
func malformedEventDeadLettered(t *testing.T) {
	ctx := context.Background()
	ingress, err := kube.CoreV1().Services("knative-eventing").Get(ctx, "broker-ingress", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := "malformed-" + string(uuid.NewUUID())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		fmt.Sprintf("http://%s/%s/operators", ingress.Spec.ClusterIP, system), bytes.NewBufferString("{not a Foo"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"Ce-Specversion": "1.0", "Ce-Id": id, "Ce-Source": "https://test.invalid",
		"Ce-Type": "dev.knative.apiserver.resource.add", "Ce-Kind": "Foo",
		"Ce-Apiversion": "samplecontroller.knative.io/v1alpha1", "Content-Type": "application/json",
	} {
		req.Header.Set(k, v)
	}
	sent := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the broker answered %d: %s", resp.StatusCode, body)
	}
	ev := deadLettered(t, 2*time.Minute, id, "knativeerrorcode: 400")
	t.Logf("dead-lettered %v after it was sent:%s", time.Since(sent).Round(time.Millisecond), ev)
}
