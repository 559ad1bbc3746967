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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"knative.dev/pkg/ptr"

	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
	"github.com/frugal-operator/foo-operator/test/onenode"
)

var (
	brokerGVR  = schema.GroupVersionResource{Group: "eventing.knative.dev", Version: "v1", Resource: "brokers"}
	triggerGVR = schema.GroupVersionResource{Group: "eventing.knative.dev", Version: "v1", Resource: "triggers"}
	sourceGVR  = schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1", Resource: "apiserversources"}
	pingGVR    = schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1", Resource: "pingsources"}
)

// The shared stream (stream/) as the release installs it.
const (
	stream      = "operator-stream"
	deadLetters = "dead-letters"
)

// streamOverlay is the cluster's kustomization of the stream: the release's
// stream, with the Components of the members named.
func streamOverlay(t *testing.T, members ...string) string {
	t.Helper()
	dir := filepath.Join(root, "_output", "stream-e2e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../release/operator-stream\ncomponents:\n"
	for _, m := range members {
		k += "- ../release/" + m + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The members' Components in the release.
const (
	fooMember = "foo-operator-stream"
	barMember = "examples/bar-operator-stream"
)

// 9. The shared stream: the Foo operator and the example Bar operator join
// it as users do (kubectl apply -k of a kustomization naming the stream and
// both Components, then each operator's own ApiServerSource deleted), the
// stream before the Bar operator is installed, and one adapter delivers for
// both, through one Broker, with retries and a dead-letter sink. It runs
// last; its last subtest switches the Foo operator back to direct wiring.
func TestBrokerWiring(t *testing.T) {
	ctx := context.Background()
	// Foos made while the operators switch (the stream's adapter starts, the
	// operators' own adapters go): each converges within 10 s of the
	// stream's adapter delivering.
	switching := namespace(t)
	const made = 5
	// The stream is applied with the Bar operator's Component before the Bar
	// operator is installed (its CRD missing): the Foo operator is served.
	if err := kubectl("delete", "--ignore-not-found", "crd", "bars.example.frugal-operator.dev"); err != nil {
		t.Fatal(err)
	}
	_, err := dyn.Resource(sourceGVR).Namespace(stream).Get(ctx, "operators", metav1.GetOptions{})
	streamSourceMade = apierrors.IsNotFound(err)
	overlay := streamOverlay(t, fooMember, barMember)
	if err := kubectl("apply", "-k", overlay); err != nil {
		t.Fatal("kubectl apply -k", overlay+":", err)
	}
	for i := range made {
		createFoo(t, newFoo(switching, fmt.Sprintf("foo-%d", i), fmt.Sprintf("dep-%d", i), 0))
	}
	clustertest.Eventually(t, 3*time.Minute, "the Broker is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, brokerGVR, stream, "operators")
	})
	clustertest.Eventually(t, 3*time.Minute, "the stream's ApiServerSource sends to the Broker", func(ctx context.Context) (bool, string) {
		u, err := dyn.Resource(sourceGVR).Namespace(stream).Get(ctx, "operators", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		sink, _, _ := unstructured.NestedString(u.Object, "status", "sinkUri")
		ok, msg := ready(ctx, sourceGVR, stream, "operators")
		return ok && strings.Contains(sink, "broker-ingress"), fmt.Sprintf("sink %q, %s", sink, msg)
	})
	clustertest.Eventually(t, 3*time.Minute, "the dead-letter sink is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, ksvcGVR, stream, deadLetters)
	})
	clustertest.Eventually(t, 3*time.Minute, "the stream-router is available", func(ctx context.Context) (bool, string) {
		d, err := kube.AppsV1().Deployments(stream).Get(ctx, "stream-router", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == 1 && d.Status.AvailableReplicas == 1, fmt.Sprintf("%+v", d.Status)
	})
	clustertest.Eventually(t, 3*time.Minute, "Trigger foo-reconciler is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, triggerGVR, stream, "foo-reconciler")
	})
	// The Foo operator's own adapter goes: the stream's replaces it.
	if err := kubectl("-n", system, "delete", "apiserversource", "foos"); err != nil {
		t.Fatal(err)
	}
	switchedTo(t, stream, switching, made)

	// Then the Bar operator is installed, and its own adapter goes too.
	if err := kubectl("apply", "-f", releaseBar); err != nil {
		t.Fatal("kubectl apply -f", releaseBar+":", err)
	}
	clustertest.Eventually(t, 3*time.Minute, "the Bar operator is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, ksvcGVR, barSystem, "bar-reconciler")
	})
	clustertest.Eventually(t, 3*time.Minute, "Trigger bar-reconciler is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, triggerGVR, stream, "bar-reconciler")
	})
	if err := kubectl("-n", barSystem, "delete", "apiserversource", "bars"); err != nil {
		t.Fatal(err)
	}
	barKept(t)
	clustertest.Eventually(t, 2*time.Minute, "one adapter in the cluster", func(ctx context.Context) (bool, string) {
		deps, err := kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, d := range deps.Items {
			names = append(names, d.Namespace+"/"+d.Name)
		}
		return len(names) == 1, fmt.Sprintf("adapter Deployments %v", names)
	})

	t.Run("a Bar through the same adapter", func(t *testing.T) { barConverges(t, switching) })
	t.Run("each member is sent its own objects only", eachMemberIsSentItsOwn)
	t.Run("lifecycle", func(t *testing.T) {
		ns := namespace(t)
		createFoo(t, newFoo(ns, "web", "web", 1))
		available(t, ns, "web", 1)
		patchFoo(t, ns, "web", `{"spec":{"replicas":2}}`)
		available(t, ns, "web", 2)
		if err := kube.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		available(t, ns, "web", 2)
	})
	// Before the burst, whose events the broker may still be retrying a
	// while after (the reconciler's pod deleted midway), waking the reconciler.
	t.Run("a wake-up behind a Deployment backlog", func(t *testing.T) { behindADeploymentBacklog(t, switching) })
	t.Run("a burst converges while the reconciler pod is deleted twice", burstWithPodDeletions)
	t.Run("a burst autoscales the reconciler past one pod", autoscaledBurst)
	t.Run("a subscriber that keeps failing dead-letters its events", failingSubscriberDeadLetters)
	t.Run("a malformed event is dead-lettered at once, not retried", malformedEventDeadLettered)
	// Before the faults, which withdraw the reader's rights on purpose.
	t.Run("the stream's reader used its members' rules only", streamLeastPrivilege)
	t.Run("a member's fault stays with it", aMembersFaultStaysWithIt)
	t.Run("the stream-keeper and stream-router used their rules only", streamPartsLeastPrivilege)
	t.Run("back to direct wiring", backToDirect)
}

// streamSourceMade tells whether the stream-keeper made the stream's source
// in this run (a cluster's first install of the stream) or found it there.
var streamSourceMade bool

// switchedTo waits until the adapter of adapters (the namespace it runs in)
// delivers, then checks that the made Foos of ns, made during the switch,
// converge within 10 s of it.
func switchedTo(t *testing.T, adapters, ns string, made int) {
	t.Helper()
	adapterNamespace = adapters
	sourcesDeliver(t, ns)
	delivering := time.Now()
	clustertest.Eventually(t, 2*time.Minute, "the Foos made during the switch converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, made)
	})
	took := time.Since(delivering).Round(time.Millisecond)
	if took > 10*time.Second {
		t.Errorf("the Foos made during the switch converged %v after the adapter in %s delivered, want within 10 s", took, adapters)
	}
	t.Logf("the Foos made during the switch converged %v after the adapter in %s delivered", took, adapters)
}

// The example Bar operator as its release installs it.
const (
	barSystem  = "bar-operator"
	releaseBar = "_output/release/examples/bar-operator.yaml"
)

var barGVR = schema.GroupVersionResource{Group: "example.frugal-operator.dev", Version: "v1alpha1", Resource: "bars"}

// barConverges makes a Bar in ns: it is Ready, its ConfigMap made, through
// the stream's adapter and the Bar reconciler's Triggers.
func barConverges(t *testing.T, ns string) {
	if err := createBar(context.Background(), ns, "shared"); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 2*time.Minute, "the Bar is Ready with its ConfigMap", func(ctx context.Context) (bool, string) {
		return barReady(ctx, ns, "shared")
	})
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "shared", metav1.GetOptions{}); err != nil {
		t.Fatal("the Bar's ConfigMap:", err)
	}
}

// streamLeastPrivilege: the stream's adapter runs as the stream's
// ServiceAccount, and what it asked of the API server (the audit log) was
// granted by the rules its members' Components and the stream aggregate,
// refused nothing, and needed nothing more. (TestLeastPrivilege has the
// operator's own accounts.)
func streamLeastPrivilege(t *testing.T) {
	pods, err := kube.CoreV1().Pods(stream).List(context.Background(), metav1.ListOptions{LabelSelector: adapterSelector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.ServiceAccountName != "stream-watcher" {
			t.Errorf("adapter pod %s runs as %q, want stream-watcher", p.Name, p.Spec.ServiceAccountName)
		}
	}
	granted, err := controlplane.GrantedRulesOf(map[string]string{
		filepath.Join(root, "stream", "200-rbac.yaml"):                                               "operator-stream-sources",
		filepath.Join(root, "config", "stream", "200-clusterroles.yaml"):                             "foo-operator-stream",
		filepath.Join(root, "examples", "bar-operator", "config", "stream", "200-clusterroles.yaml"): "bar-operator-stream",
	})
	if err != nil {
		t.Fatal(err)
	}
	u, err := controlplane.PrivilegeUseOf(auditLog, auditFrom, granted, "system:serviceaccount:"+stream+":stream-watcher", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Refused) > 0 || len(u.Ungranted) > 0 {
		t.Errorf("stream-watcher: %v", u)
	}
	// Eventing's access check asks for get too, which the adapter never uses.
	t.Logf("stream-watcher: granted and not used: %v", u.Unused)
}

// streamPartsLeastPrivilege: what the stream-keeper and the stream-router
// asked of the API server (the audit log) was granted by their roles,
// refused nothing, and used every rule.
func streamPartsLeastPrivilege(t *testing.T) {
	for account, roles := range map[string][]string{
		"stream-keeper": {"stream-keeper", "operator-stream-keeper"},
		"stream-router": {"stream-router"},
	} {
		granted := map[string]bool{}
		for _, role := range roles {
			rules, err := controlplane.GrantedRules(filepath.Join(root, "stream", "200-rbac.yaml"), role)
			if err != nil {
				t.Fatal(err)
			}
			for r := range rules {
				granted[r] = true
			}
		}
		u, err := controlplane.PrivilegeUseOf(auditLog, auditFrom, granted, "system:serviceaccount:"+stream+":"+account, "")
		if err != nil {
			t.Fatal(err)
		}
		// The keeper makes the stream's source only where there is none.
		if account == "stream-keeper" && !streamSourceMade {
			u.Unused = slices.DeleteFunc(u.Unused, func(r string) bool { return r == "create sources.knative.dev/apiserversources" })
		}
		if len(u.Refused) > 0 || len(u.Ungranted) > 0 || len(u.Unused) > 0 {
			t.Errorf("%s: %v", account, u)
		}
	}
}

// backToDirect leaves the stream as a user does: the Foo operator's release
// applied again (its own ApiServerSource back), its Component taken out of
// the cluster's kustomization, which is applied again, and its ClusterRole
// and Trigger deleted, in that order. Foos made meanwhile converge within 10 s of the Foo
// operator's own adapter delivering. The Bar operator stays on the stream.
func backToDirect(t *testing.T) {
	ns := namespace(t)
	const made = 5
	if err := kubectl("apply", "-f", release); err != nil {
		t.Fatal(err)
	}
	for i := range made {
		createFoo(t, newFoo(ns, fmt.Sprintf("foo-%d", i), fmt.Sprintf("dep-%d", i), 0))
	}
	if err := kubectl("apply", "-k", streamOverlay(t, barMember)); err != nil {
		t.Fatal(err)
	}
	// The rights first, the Trigger still declaring the kinds: the stream
	// leaves the Foo operator out meanwhile.
	if err := kubectl("delete", "clusterrole", "foo-operator-stream"); err != nil {
		t.Fatal(err)
	}
	if err := kubectl("-n", stream, "delete", "trigger", "-l", "app.kubernetes.io/part-of=foo-operator"); err != nil {
		t.Fatal(err)
	}
	switchedTo(t, system, ns, made)
	clustertest.Eventually(t, time.Minute, "the stream no longer watches the Foo operator's kinds", func(ctx context.Context) (bool, string) {
		kinds, err := streamKinds(ctx)
		if err != nil {
			return false, err.Error()
		}
		return !slices.Contains(kinds, "Foo") && !slices.Contains(kinds, "Deployment"), fmt.Sprintf("it watches %v", kinds)
	})
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
	if seen, logs := stopWatching(); len(seen) > 0 {
		t.Errorf("the dead-letter sink was woken during the burst: pods %v; its log:\n%s", seen, logs)
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
// until the returned function is called, which returns their names and
// what they logged (read while they run: the sink scales to zero, and its
// pods are gone by the time a test looks). An event sent to the sink
// makes a pod.
func watchDeadLetters(t *testing.T) func() ([]string, string) {
	t.Helper()
	atZero(t, stream, deadLetters)
	stop := watchPodsLogs(stream, deadLetters, "user-container")
	return func() ([]string, string) {
		names, logs := stop()
		if len(names) == 0 {
			return nil, ""
		}
		return names, logs + eventingTrouble(context.Background())
	}
}

// watchPods watches the pods of Knative Service ns/ksvc and returns a
// function that stops and returns the names of those made since the call.
func watchPods(ns, ksvc string) func() []string {
	stop := watchPodsLogs(ns, ksvc, "")
	return func() []string {
		names, _ := stop()
		return names
	}
}

// watchPodsLogs is watchPods that also keeps the log of container, if not
// empty, of each pod it sees made, as last read while the pod was there,
// and returns those logs too.
func watchPodsLogs(ns, ksvc, container string) func() ([]string, string) {
	since := metav1.NewTime(time.Now().Truncate(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	var seen []string
	logs := map[string][]byte{}
	readLog := func(ctx context.Context, pod string) {
		l, err := kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
		if err == nil && len(l) >= len(logs[pod]) {
			logs[pod] = l
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=" + ksvc})
			if err == nil {
				for _, p := range pods.Items {
					if p.CreationTimestamp.Before(&since) {
						continue
					}
					if !slices.Contains(seen, p.Name) {
						seen = append(seen, p.Name)
					}
					if container != "" {
						readLog(ctx, p.Name)
					}
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	return func() ([]string, string) {
		cancel()
		<-done
		var out strings.Builder
		for _, name := range seen {
			if container != "" {
				readLog(context.Background(), name) // what it logged since, if it is still there
				fmt.Fprintf(&out, "%s:\n%s\n", name, logs[name])
			}
		}
		return seen, out.String()
	}
}

// deadLettered waits until the dead-letter sink has logged an event whose
// attributes contain every one of want, and returns what it logged of it.
func deadLettered(t *testing.T, within time.Duration, want ...string) string {
	t.Helper()
	var found string
	clustertest.Eventually(t, within, fmt.Sprintf("the dead-letter sink logs an event with %q", want), func(ctx context.Context) (bool, string) {
		pods, err := kube.CoreV1().Pods(stream).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=" + deadLetters})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			logs, err := kube.CoreV1().Pods(stream).GetLogs(p.Name, &corev1.PodLogOptions{Container: "user-container"}).DoRaw(ctx)
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

// eventingTrouble tells what the broker's pods went through: restarts, and
// the warnings, errors and gone Triggers their logs hold (the last 40
// lines of each). A dead letter without knativeerror* attributes was
// refused or lost between the broker's channel and its filter, which the
// sink alone cannot tell.
func eventingTrouble(ctx context.Context) string {
	pods, err := kube.CoreV1().Pods("knative-eventing").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out strings.Builder
	for _, p := range pods.Items {
		if !slices.ContainsFunc([]string{"imc-dispatcher", "mt-broker-filter", "mt-broker-ingress"}, func(prefix string) bool {
			return strings.HasPrefix(p.Name, prefix)
		}) {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount > 0 {
				fmt.Fprintf(&out, "%s/%s restarted %d times, last: %+v\n", p.Name, c.Name, c.RestartCount, c.LastTerminationState.Terminated)
			}
		}
		logs, err := kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			fmt.Fprintf(&out, "%s: %v\n", p.Name, err)
			continue
		}
		var trouble []string
		for _, l := range strings.Split(string(logs), "\n") {
			// Eventing's config-logging names the level "level", Serving's
			// "severity". The filter tells at info that a Trigger is gone
			// (its events are dead-lettered: docs/shared-stream.md, "Leave").
			if l := strings.ToLower(l); strings.Contains(l, `"level":"error"`) || strings.Contains(l, `"level":"warn`) ||
				strings.Contains(l, `"severity":"error"`) || strings.Contains(l, `"severity":"warn`) ||
				strings.Contains(l, "unable to find the trigger") {
				trouble = append(trouble, l)
			}
		}
		fmt.Fprintf(&out, "%s: %d warnings, errors and gone Triggers, the last:\n%s\n", p.Name, len(trouble), strings.Join(trouble[max(0, len(trouble)-40):], "\n"))
	}
	return out.String()
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
	failing := "http://" + onenode.NodeIP + ":1/"
	ns := namespace(t)
	trigger := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "eventing.knative.dev/v1",
		"kind":       "Trigger",
		"metadata":   map[string]any{"name": "always-fails", "namespace": stream},
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
	if _, err := dyn.Resource(triggerGVR).Namespace(stream).Create(ctx, trigger, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(triggerGVR).Namespace(stream).Delete(context.Background(), "always-fails", metav1.DeleteOptions{})
	})
	clustertest.Eventually(t, 2*time.Minute, "the failing Trigger is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, triggerGVR, stream, "always-fails")
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
		fmt.Sprintf("http://%s/%s/operators", ingress.Spec.ClusterIP, stream), bytes.NewBufferString("{not a Foo"))
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
