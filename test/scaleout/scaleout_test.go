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

package scaleout

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	bucketset "github.com/frugal-operator/foo-operator/pkg/serverless/buckets"
	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// reconcilerUser is the reconciler's identity: config/'s ServiceAccount.
const reconcilerUser = "system:serviceaccount:" + localenv.Namespace + ":foo-reconciler"

func namespace(t *testing.T) string {
	t.Helper()
	return clustertest.Namespace(t, env.Kube, "scaleout-")
}

func newFoo(ns string, i int, replicas int32) *samplesv1alpha1.Foo {
	return &samplesv1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("foo-%04d", i)},
		Spec:       samplesv1alpha1.FooSpec{DeploymentName: fmt.Sprintf("dep-%04d", i), Replicas: ptr.Int32(replicas)},
	}
}

// createFoos creates n Foos in ns at once (8 at a time), calling during(i)
// before the i-th.
func createFoos(t *testing.T, ns string, n int, during func(i int)) {
	t.Helper()
	next := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if _, err := env.Foos.SamplecontrollerV1alpha1().Foos(ns).Create(context.Background(), newFoo(ns, i, int32(i%3)), metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		if during != nil {
			during(i)
		}
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal("creating Foos:", err)
	}
}

func converged(ns string, n int) func(ctx context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) { return localenv.Converged(ctx, env.Kube, env.Foos, ns, n) }
}

// writesIn counts the reconciler's writes in ns since the audit log's
// offset from.
func writesIn(t *testing.T, ns string, from int64) localenv.Writes {
	t.Helper()
	events, _, err := env.CP.AuditEvents(from, reconcilerUser, foo.AgentName)
	if err != nil {
		t.Fatal(err)
	}
	return localenv.WritesIn(events, ns)
}

func auditEnd(t *testing.T) int64 {
	t.Helper()
	end, err := controlplane.AuditLogEnd(env.CP.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// reconcile is one reconcile that succeeded, read from a process's log.
type reconcile struct {
	proc       string
	start, end time.Time
}

// reconciles reads, from every process's logs, the successful reconciles
// of the keys of ns, by key.
func reconciles(t *testing.T, ns string) map[string][]reconcile {
	t.Helper()
	out := map[string][]reconcile{}
	for _, p := range env.procs {
		p.mu.Lock()
		logs := append([]string(nil), p.logs...)
		p.mu.Unlock()
		for _, file := range logs {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				var line struct {
					Msg      string `json:"message"`
					Key      string `json:"knative.dev/key"`
					TS       string `json:"timestamp"`
					Duration string `json:"duration"`
				}
				if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "Reconcile succeeded" || !strings.HasPrefix(line.Key, ns+"/") {
					continue
				}
				end, err := time.Parse(time.RFC3339Nano, line.TS)
				if err != nil {
					t.Fatalf("%s: bad timestamp %q", file, line.TS)
				}
				d, err := time.ParseDuration(line.Duration)
				if err != nil {
					t.Fatalf("%s: bad duration %q", file, line.Duration)
				}
				out[line.Key] = append(out[line.Key], reconcile{proc: p.name, start: end.Add(-d), end: end})
			}
			f.Close()
		}
	}
	return out
}

// checkOneAtATime fails t if two processes' reconciles of one key of ns
// overlapped, and returns how many keys each process reconciled.
func checkOneAtATime(t *testing.T, ns string) map[string]int {
	t.Helper()
	by := map[string]int{}
	for key, rs := range reconciles(t, ns) {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
		seen := map[string]bool{}
		for i, r := range rs {
			seen[r.proc] = true
			if i > 0 && r.proc != rs[i-1].proc && r.start.Before(rs[i-1].end) {
				t.Errorf("%s: reconciled in %s from %s and in %s until %s", key, r.proc, r.start.Format(time.StampMicro),
					rs[i-1].proc, rs[i-1].end.Format(time.StampMicro))
			}
		}
		for p := range seen {
			by[p]++
		}
	}
	return by
}

func TestABurstIsSharedAndEachDeploymentMadeOnce(t *testing.T) {
	ns := namespace(t)
	const n = 300
	from := auditEnd(t)
	createFoos(t, ns, n, nil)
	clustertest.Eventually(t, 3*time.Minute, "every Foo converges", converged(ns, n))
	w := writesIn(t, ns, from)
	t.Logf("%d Foos: %+v", n, w)
	if w.DeploymentCreates != n || w.AlreadyExists != 0 || w.Conflicts != 0 {
		t.Errorf("writes %+v; want %d Deployments created, no AlreadyExists, no conflicts", w, n)
	}
	by := checkOneAtATime(t, ns)
	t.Logf("keys reconciled, by process: %v", by)
	for _, p := range env.procs {
		if by[p.name] == 0 {
			t.Errorf("%s reconciled nothing: the keys were not shared", p.name)
		}
	}
}

func TestChangesInARowEndAtTheLastSpec(t *testing.T) {
	ns := namespace(t)
	const n = 100
	changes := []int32{3, 4, 5, 6, 7}
	createFoos(t, ns, n, nil)
	clustertest.Eventually(t, 3*time.Minute, "every Foo converges", converged(ns, n))
	from := auditEnd(t)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if err := localenv.SetReplicas(context.Background(), env.Foos, ns, fmt.Sprintf("foo-%04d", i), changes...); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal("changing Foos:", err)
	}
	clustertest.Eventually(t, 3*time.Minute, "every Foo ends at its last spec", func(ctx context.Context) (bool, string) {
		if ok, msg := converged(ns, n)(ctx); !ok {
			return false, msg
		}
		deps, err := env.Kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, d := range deps.Items {
			if *d.Spec.Replicas != changes[len(changes)-1] {
				return false, fmt.Sprintf("%s has %d replicas", d.Name, *d.Spec.Replicas)
			}
		}
		return true, ""
	})
	// Conflicts there may be: a status update races the next change.
	w := writesIn(t, ns, from)
	t.Logf("%d Foos changed %d times: %+v", n, len(changes), w)
	if w.DeploymentCreates != 0 || w.AlreadyExists != 0 {
		t.Errorf("writes %+v; want no creates, no AlreadyExists", w)
	}
	t.Logf("keys reconciled, by process: %v", checkOneAtATime(t, ns))
}

// A process killed mid-burst (a crash), or stopped (a scale-down), loses
// nothing: the others take its buckets over, a crashed one's with a resync.
func TestAProcessGoneMidBurstLosesNothing(t *testing.T) {
	for _, how := range []string{"stopped", "killed"} {
		t.Run(how, func(t *testing.T) {
			ns := namespace(t)
			const n = 200
			from := auditEnd(t)
			gone := env.procs[len(env.procs)-1]
			var goneAt time.Time
			createFoos(t, ns, n, func(i int) {
				if i != n/3 {
					return
				}
				goneAt = time.Now()
				if how == "killed" {
					if err := gone.kill(); err != nil {
						t.Fatal(err)
					}
				} else {
					gone.stop()
				}
			})
			clustertest.Eventually(t, 3*time.Minute, "every Foo converges", converged(ns, n))
			t.Logf("every Foo converged %v after a process was %s", time.Since(goneAt).Round(time.Millisecond), how)
			if w := writesIn(t, ns, from); w.DeploymentCreates != n || w.AlreadyExists != 0 {
				t.Errorf("writes %+v; want %d Deployments created, no AlreadyExists", w, n)
			}
			checkOneAtATime(t, ns)
			// Back, as Knative would bring a pod back under load.
			if err := gone.start(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The ping's resync lists once, in the process it reaches, whatever the
// number of processes; its keys are reconciled where they are held.
func TestAPingListsOnce(t *testing.T) {
	ns := namespace(t)
	const n = 30
	createFoos(t, ns, n, nil)
	clustertest.Eventually(t, 3*time.Minute, "every Foo converges", converged(ns, n))
	from := auditEnd(t)
	if _, err := env.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	events, _, err := env.CP.AuditEvents(from, reconcilerUser, foo.AgentName)
	if err != nil {
		t.Fatal(err)
	}
	if lists := localenv.ListsOfEvery(events, "foos"); len(lists) != 1 {
		t.Errorf("the ping listed the Foos %d times, want once", len(lists))
	}
}

// A process that starts beside others (a scale-up) lists nothing: the
// others ran while it did not, so its cold start has nothing to reconcile.
func TestAProcessThatJoinsOthersListsNothing(t *testing.T) {
	p := env.procs[len(env.procs)-1]
	p.stop()
	// The others serve: one has just reconciled, and its member Lease says
	// so. Beside members all idle for a Lease's duration, a process counts
	// as the first to serve, and lists.
	ns := namespace(t)
	createFoos(t, ns, 1, nil)
	clustertest.Eventually(t, time.Minute, "a Foo converged, a member Lease saying so", func(ctx context.Context) (bool, string) {
		if ok, why := converged(ns, 1)(ctx); !ok {
			return false, why
		}
		leases, err := env.Kube.CoordinationV1().Leases(localenv.Namespace).List(ctx, metav1.ListOptions{LabelSelector: bucketset.LabelKey})
		if err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(leases.Items, func(l coordinationv1.Lease) bool {
			at, err := time.Parse(time.RFC3339Nano, l.Annotations[bucketset.ActiveAnnotation])
			return err == nil && time.Since(at) < 5*time.Second
		}), "no member Lease says its process began a reconcile in the last 5 s"
	})
	from := auditEnd(t)
	if err := p.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	log := p.logs[len(p.logs)-1]
	p.mu.Unlock()
	clustertest.Eventually(t, time.Minute, "its cold start is done", func(context.Context) (bool, string) {
		b, err := os.ReadFile(log)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(string(b), `"message":"Cold-start resync`), "no cold-start resync in " + log
	})
	events, _, err := env.CP.AuditEvents(from, reconcilerUser, foo.AgentName)
	if err != nil {
		t.Fatal(err)
	}
	for _, resource := range []string{"foos", "deployments"} {
		if lists := localenv.ListsOfEvery(events, resource); len(lists) > 0 {
			t.Errorf("listed every namespace's %s %d times while a process joined", resource, len(lists))
		}
	}
}

// Run last: the reconcilers used every rule of config/scale-out, and
// nothing that config/ does not grant.
func TestZZLeastPrivilegeOfTheBuckets(t *testing.T) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	granted, err := controlplane.GrantedRulesOf(map[string]string{
		root + "/config/200-clusterroles.yaml": "foo-reconciler",
		root + "/config/200-roles.yaml":        "foo-reconciler",
	})
	if err != nil {
		t.Fatal(err)
	}
	buckets, err := controlplane.GrantedRules(root+"/"+bucketsManifest, "foo-reconciler-buckets")
	if err != nil {
		t.Fatal(err)
	}
	for r := range buckets {
		granted[r] = true
	}
	clustertest.Eventually(t, time.Minute, "every rule of the buckets used, nothing refused or ungranted", func(context.Context) (bool, string) {
		u, err := controlplane.PrivilegeUseOf(env.CP.AuditLog, 0, granted, reconcilerUser, foo.AgentName)
		if err != nil {
			return false, err.Error()
		}
		unusedBuckets := 0
		for _, r := range u.Unused {
			if buckets[r] {
				unusedBuckets++
			}
		}
		return len(u.Refused)+len(u.Ungranted)+unusedBuckets == 0, u.String()
	})
}
