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
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	"github.com/frugal-operator/foo-operator/pkg/serverless/buckets"
	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// 11. Three reconciler pods on real Knative (config/scale-out applied,
// BUCKETS=6, min-scale and max-scale 3): a burst of 2000 Foos, one of the
// pods deleted halfway through, converges; each Deployment is created once
// (the cluster's audit log: no AlreadyExists, no update conflicts), and
// every pod created some (by its IP in the log): the keys held elsewhere
// went from pod to pod. Then 200 Foos, each changed five times in a row,
// end at their last spec and Ready, with no Deployment created again.
// After TestLeastPrivilege, which knows only config/'s roles.
func TestThreePodsShareABurst(t *testing.T) {
	ctx := context.Background()
	const pods, n = 3, 2000
	scaledOut(t, pods, pods)
	var running map[string]string
	clustertest.Eventually(t, 3*time.Minute, "three ready reconciler pods of the new revision", func(ctx context.Context) (bool, string) {
		running = readyPods(ctx, t)
		return len(running) == pods, fmt.Sprintf("%d ready: %v", len(running), running)
	})
	// Both namespaces first: after the burst the adapter's rollout for a
	// new one would wait behind the Deployment controller's backlog.
	ns, changed := namespace(t), namespace(t)
	from, err := controlplane.AuditLogEnd(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	createAtOnce(t, ns, n, func() { // one pod goes mid-burst, as a scale-down takes it
		for name := range running {
			if err := kube.CoreV1().Pods(system).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Logf("pod %s deleted after %d creates", name, n/2)
			break
		}
	})
	clustertest.Eventually(t, 10*time.Minute, "every Foo converges", func(ctx context.Context) (bool, string) { return converged(ctx, ns, n) })
	t.Logf("%d Foos converged %v after the first was created, on %d pods", n, time.Since(start).Round(time.Millisecond), pods)

	w := writesIn(t, ns, from)
	t.Logf("the reconcilers' writes: %+v", w)
	if w.DeploymentCreates != n || w.AlreadyExists != 0 || w.Conflicts != 0 {
		t.Errorf("want %d Deployments created, no AlreadyExists, no update conflicts", n)
	}
	for name, ip := range running {
		t.Logf("pod %s (%s) created %d of the Deployments", name, ip, w.CreatesBy[ip])
		if w.CreatesBy[ip] == 0 {
			t.Errorf("pod %s created none of the Deployments", name)
		}
	}
	changesInARow(t, changed, 200)
}

// 12. Foos refused their names on three pods are each kept in the one
// requeue PingSource, which more than one pod wrote, each merging its keys
// into what the others had written; then, with the reconciler at zero and
// the names freed, the requeue's ping wakes it and every Foo gets its
// Deployment, and the PingSource is deleted with its last key (as
// TestARefusedFooIsTriedAgainFromZero, on one pod).
func TestRefusedFoosOnThreePodsAreTriedAgainFromZero(t *testing.T) {
	ctx := context.Background()
	const pods, n = 3, 30
	quiet(t)
	setResyncSchedule(t, "0 0 1 1 *")
	scaledOut(t, pods, pods)
	clustertest.Eventually(t, 3*time.Minute, "three ready reconciler pods of the new revision", func(ctx context.Context) (bool, string) {
		running := readyPods(ctx, t)
		return len(running) == pods, fmt.Sprintf("%d ready: %v", len(running), running)
	})
	ns := namespace(t)
	from, err := controlplane.AuditLogEnd(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, n)
	for i := range n {
		theirs := resources.MakeDeployment(newFoo(ns, "x", fmt.Sprintf("taken-%02d", i), 0))
		theirs.OwnerReferences = nil
		if _, err := kube.AppsV1().Deployments(ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createFoo(t, newFoo(ns, fmt.Sprintf("late-%02d", i), fmt.Sprintf("taken-%02d", i), 0))
		keys[i] = fmt.Sprintf("%s/late-%02d", ns, i)
	}
	keptForRequeue(t, 2*time.Minute, keys...)
	writers := map[string]int{}
	for _, e := range reconcilerRequests(t, from) {
		if e.ObjectRef.Resource == "pingsources" && e.ObjectRef.Name == requeueSchedule && e.Verb != "get" && len(e.SourceIPs) > 0 {
			writers[e.SourceIPs[0]]++
		}
	}
	t.Logf("the requeue schedule's writes, by pod IP: %v", writers)
	if len(writers) < 2 {
		t.Errorf("the requeue schedule was written by %d pod(s), want more than one: nothing shows the pods merging their keys", len(writers))
	}

	setReconciler(t, reconcilerEnv(t), map[string]string{"min-scale": "0", "max-scale": fmt.Sprint(pods)})
	atZero(t, system, service)
	zero := time.Now()
	for i := range n {
		if err := kube.AppsV1().Deployments(ns).Delete(ctx, fmt.Sprintf("taken-%02d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	woke := nextPod(t, zero, 4*time.Minute)
	t.Logf("the reconciler woke %v after it was at zero", woke.Sub(zero.Truncate(time.Second)))
	clustertest.Eventually(t, 2*time.Minute, "every Foo owns its Deployment", func(ctx context.Context) (bool, string) {
		for i := range n {
			name := fmt.Sprintf("taken-%02d", i)
			d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if len(d.OwnerReferences) != 1 || d.OwnerReferences[0].Name != fmt.Sprintf("late-%02d", i) {
				return false, fmt.Sprintf("%s: owners %v", name, d.OwnerReferences)
			}
		}
		return true, ""
	})
	requeueScheduleGone(t)
}

// createAtOnce creates n Foos in ns from 8 clients at once, and calls
// halfway, if not nil, once half of them are created.
func createAtOnce(t *testing.T, ns string, n int, halfway func()) {
	t.Helper()
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				createFoo(t, newFoo(ns, fmt.Sprintf("foo-%04d", i), fmt.Sprintf("dep-%04d", i), 0))
			}
		})
	}
	for i := range n {
		if i == n/2 && halfway != nil {
			halfway()
		}
		next <- i
	}
	close(next)
	wg.Wait()
}

// autoscaledBurst: 2000 Foos created at once through the stream, with the
// reconciler on zero to three pods as Knative's autoscaler decides (the
// broker's deliveries are concurrent, so it goes past one pod): every Foo
// converges, each Deployment created once, by more than one pod; then 200
// Foos changed five times in a row end at their last spec and Ready; and
// the Service is back at zero.
func autoscaledBurst(t *testing.T) {
	const n = 2000
	scaledOut(t, 0, 3)
	ns, changed := namespace(t), namespace(t)
	stopWatching := watchDeadLetters(t)
	// The namespaces' canaries woke the reconciler: the burst starts once
	// it is back at zero, so that its first pod's cold start is the burst's.
	atZero(t, system, service)
	from, err := controlplane.AuditLogEnd(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	createAtOnce(t, ns, n, nil)
	if err := clustertest.Poll(10*time.Minute, "every Foo converges", func(ctx context.Context) (bool, string) { return converged(ctx, ns, n) }); err != nil {
		seen, logs := stopWatching()
		t.Fatalf("%v\nthe dead-letter sink's pods: %v; their log:\n%s", err, seen, logs)
	}
	t.Logf("%d Foos converged %v after the first was created", n, time.Since(start).Round(time.Millisecond))
	w := writesIn(t, ns, from)
	t.Logf("the reconcilers' writes: %+v", w)
	if w.DeploymentCreates != n || w.AlreadyExists != 0 || w.Conflicts != 0 {
		t.Errorf("want %d Deployments created, no AlreadyExists, no update conflicts", n)
	}
	if len(w.CreatesBy) < 2 {
		t.Errorf("the Deployments were created by %d pod(s), want more than one: the autoscaler kept the burst on one pod", len(w.CreatesBy))
	}
	// The first pod after zero lists every Foo, even beside the pod before
	// it still draining, and again once that one has left the buckets it
	// held; so does each pod started before a pod had reconciled what its
	// own list found; a pod that joins pods that serve lists nothing
	// (docs/configuration.md, "More than one pod"). And a ping's resync
	// lists if one came.
	lists := localenv.ListsOfEvery(reconcilerRequests(t, from), "foos")
	t.Logf("LISTs of every namespace's Foos, by pod IP: %v", lists)
	byPod := map[string]int{}
	for _, ip := range lists {
		byPod[ip]++
	}
	if len(lists) < 1 {
		t.Error("every namespace's Foos were never listed during the burst: no pod ran the cold-start resync")
	}
	for ip, times := range byPod {
		if times > 3 {
			t.Errorf("pod %s listed every namespace's Foos %d times, want at most its cold start, a takeover and a ping", ip, times)
		}
	}
	// A dead letter that the Foo reconciler failed is a lost event. Others
	// are logged: those of a Trigger an earlier subtest deleted
	// (docs/shared-stream.md, "Leave").
	if seen, logs := stopWatching(); len(seen) > 0 {
		t.Logf("the dead-letter sink was woken by the burst: pods %v; its log:\n%s", seen, logs)
		noneFailedBy(t, logs, service)
	}
	stopWatching = watchDeadLetters(t)
	changesInARow(t, changed, 200)
	if seen, logs := stopWatching(); len(seen) > 0 {
		t.Logf("the dead-letter sink was woken by the changes: pods %v; its log:\n%s", seen, logs)
		noneFailedBy(t, logs, service)
	}
	atZero(t, system, service)
}

// noneFailedBy fails t if the dead-letter sink's log holds an event that
// Knative Service ksvc of the system namespace failed.
func noneFailedBy(t *testing.T, logs, ksvc string) {
	t.Helper()
	dest := fmt.Sprintf("knativeerrordest: http://%s.%s.svc.cluster.local", ksvc, system)
	for _, ev := range strings.Split(logs, "cloudevents.Event")[1:] {
		if strings.Contains(ev, dest) {
			t.Errorf("an event %s failed was dead-lettered:%s", ksvc, ev)
		}
	}
}

// scaledOut lets the reconciler run on more than one pod, between minScale
// and maxScale (BUCKETS=6, the Leases' Role), until the test ends; then it
// is back at one pod at most, at zero.
func scaledOut(t *testing.T, minScale, maxScale int) {
	t.Helper()
	role := filepath.Join(root, "config", "scale-out", "200-buckets.yaml")
	if err := kubectl("apply", "-f", role); err != nil {
		t.Fatal(err)
	}
	env := reconcilerEnv(t)
	set := func(env []any, minScale, maxScale string) {
		t.Helper()
		setReconciler(t, env, map[string]string{"min-scale": minScale, "max-scale": maxScale})
		clustertest.Eventually(t, 3*time.Minute, "the Knative Service is Ready", func(ctx context.Context) (bool, string) {
			return ready(ctx, ksvcGVR, system, service)
		})
	}
	t.Cleanup(func() {
		set(env, "0", "1")
		atZero(t, system, service)
		_ = kube.CoordinationV1().Leases(system).DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: buckets.LabelKey + "=" + service})
		if err := kubectl("delete", "-f", role); err != nil {
			t.Error(err)
		}
	})
	set(append(append([]any{}, env...), map[string]any{"name": "BUCKETS", "value": "6"}), fmt.Sprint(minScale), fmt.Sprint(maxScale))
}

// changesInARow creates n Foos in ns, waits for them to converge, then changes
// each one's replicas to 1, 2, 3, 4 and 0 in a row: every Foo ends at its
// last spec and Ready, and no Deployment is created again. A quota of no
// pods in the namespace keeps the node from running up to 800 of them;
// Ready at 0 replicas needs the Deployment controller to have caught up.
func changesInARow(t *testing.T, ns string, n int) {
	ctx := context.Background()
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	if _, err := kube.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		createFoo(t, newFoo(ns, fmt.Sprintf("foo-%04d", i), fmt.Sprintf("dep-%04d", i), 0))
	}
	clustertest.Eventually(t, 10*time.Minute, "every Foo converges", func(ctx context.Context) (bool, string) { return converged(ctx, ns, n) })
	from, err := controlplane.AuditLogEnd(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	changes := []int32{1, 2, 3, 4, 0}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if err := localenv.SetReplicas(ctx, foos, ns, fmt.Sprintf("foo-%04d", i), changes...); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal("changing Foos:", err)
	}
	clustertest.Eventually(t, 10*time.Minute, "every Foo at its last spec and Ready", func(ctx context.Context) (bool, string) {
		if ok, msg := converged(ctx, ns, n); !ok {
			return false, msg
		}
		fs, err := foos.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		notReady := 0
		for _, f := range fs.Items {
			if *f.Spec.Replicas != 0 || f.Generation != int64(1+len(changes)) {
				return false, fmt.Sprintf("%s has %d replicas at generation %d", f.Name, *f.Spec.Replicas, f.Generation)
			}
			if !f.Status.IsReady() {
				notReady++
			}
		}
		return notReady == 0, fmt.Sprintf("%d of %d Foos not Ready", notReady, n)
	})
	w := writesIn(t, ns, from)
	// Update conflicts there may be: a status update races the next change.
	t.Logf("%d Foos changed %d times in a row, all Ready %v after the first change; the reconcilers' writes: %+v",
		n, len(changes), time.Since(start).Round(time.Millisecond), w)
	if w.DeploymentCreates != 0 || w.AlreadyExists != 0 {
		t.Error("want no Deployment created, no AlreadyExists")
	}
}

// writesIn counts the reconcilers' writes in ns since offset from of the
// audit log.
func writesIn(t *testing.T, ns string, from int64) localenv.Writes {
	t.Helper()
	return localenv.WritesIn(reconcilerRequests(t, from), ns)
}

// reconcilerRequests are the Foo reconciler's requests since the audit
// log's offset from.
func reconcilerRequests(t *testing.T, from int64) []controlplane.AuditEvent {
	t.Helper()
	events, _, err := controlplane.ReadAuditLog(auditLog, from, "system:serviceaccount:"+system+":foo-reconciler", foo.AgentName)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// readyPods are the reconciler's ready pods that are not being deleted,
// their IPs by name.
func readyPods(ctx context.Context, t *testing.T) map[string]string {
	t.Helper()
	list, err := kube.CoreV1().Pods(system).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=" + service})
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]string{}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				pods[p.Name] = p.Status.PodIP
			}
		}
	}
	return pods
}
