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
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/test/clustertest"
)

// The trust model (docs/trust-model.md): an event chooses which Foo is reconciled, never
// what is written or reported.

// sent returns f as the adapter sends it, with its apiVersion and kind.
func sent(f *samplesv1alpha1.Foo) *samplesv1alpha1.Foo {
	f = f.DeepCopy()
	f.SetGroupVersionKind(samplesv1alpha1.SchemeGroupVersion.WithKind("Foo"))
	return f
}

func sentDeployment(d *appsv1.Deployment) *appsv1.Deployment {
	d = d.DeepCopy()
	d.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	return d
}

// convergedFoo waits until the Foo's status reports its generation and its
// Deployment has the Foo's replicas, and returns both.
func convergedFoo(t *testing.T, ns, name string) (*samplesv1alpha1.Foo, *appsv1.Deployment) {
	t.Helper()
	var f *samplesv1alpha1.Foo
	var d *appsv1.Deployment
	eventually(t, "Foo "+name+" converged", func(ctx context.Context) (bool, string) {
		var err error
		if f, err = getFoo(ctx, ns, name); err != nil {
			return false, err.Error()
		}
		if d, err = getDeployment(ctx, ns, f.Spec.DeploymentName); err != nil {
			return false, err.Error()
		}
		return f.Status.ObservedGeneration == f.Generation && *d.Spec.Replicas == *f.Spec.Replicas,
			fmt.Sprintf("generation %d observed %d, replicas %d of %d", f.Generation, f.Status.ObservedGeneration, *d.Spec.Replicas, *f.Spec.Replicas)
	})
	return f, d
}

// Fifty versions of one Foo, delivered again in shuffled order with 0–300 ms
// of jitter, as a parallel sender redelivering would: nothing goes back.
func TestStaleFooEventsNeverRollBack(t *testing.T) {
	ns := namespace(t)
	const n = 50
	versions := []*samplesv1alpha1.Foo{sent(createFoo(t, newFoo(ns, "versions", "versions", 0)))}
	for i := 1; i <= n; i++ {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			f, err := getFoo(context.Background(), ns, "versions")
			if err != nil {
				return err
			}
			f.Spec.Replicas = ptr.Int32(int32(i))
			f, err = env.Foos.SamplecontrollerV1alpha1().Foos(ns).Update(context.Background(), f, metav1.UpdateOptions{})
			if err == nil {
				versions = append(versions, sent(f))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	foo, dep := convergedFoo(t, ns, "versions")
	if *dep.Spec.Replicas != n {
		t.Fatalf("converged at %d replicas, want %d", *dep.Spec.Replicas, n)
	}

	rand.Shuffle(len(versions), func(i, j int) { versions[i], versions[j] = versions[j], versions[i] })
	var wg sync.WaitGroup
	answers := make(chan string, len(versions))
	for _, v := range versions {
		wg.Go(func() {
			time.Sleep(rand.N(300 * time.Millisecond)) // the sender's jitter, not a wait for anything
			code, body, err := env.SendObject(context.Background(), "update", v, "foos")
			if err != nil || code/100 != 2 {
				answers <- fmt.Sprintf("generation %d: %d %s %v", v.Generation, code, body, err)
			}
		})
	}
	wg.Wait()
	close(answers)
	for a := range answers {
		t.Error("answer:", a)
	}

	// Every event was answered after its reconcile: the state is final now.
	after, err := getFoo(context.Background(), ns, "versions")
	if err != nil {
		t.Fatal(err)
	}
	afterDep, err := getDeployment(context.Background(), ns, "versions")
	if err != nil {
		t.Fatal(err)
	}
	if *afterDep.Spec.Replicas != n || after.Status.ObservedGeneration != after.Generation {
		t.Errorf("after the stale events: replicas %d (want %d), observedGeneration %d of %d",
			*afterDep.Spec.Replicas, n, after.Status.ObservedGeneration, after.Generation)
	}
	// Converged state, fresh reads: not a single write.
	if afterDep.ResourceVersion != dep.ResourceVersion || after.ResourceVersion != foo.ResourceVersion {
		t.Errorf("stale events caused writes: deployment resourceVersion %s → %s, Foo %s → %s",
			dep.ResourceVersion, afterDep.ResourceVersion, foo.ResourceVersion, after.ResourceVersion)
	}
}

// A forged event carrying a real Foo's name with another spec, or a forged
// Deployment reporting pods that do not exist, chooses nothing.
func TestForgedEventsChooseNothing(t *testing.T) {
	ns := namespace(t)
	createFoo(t, newFoo(ns, "real", "real", 2))
	foo, dep := convergedFoo(t, ns, "real")

	forged := sent(foo)
	forged.Generation, forged.Status.ObservedGeneration = 99, 0
	forged.Spec = samplesv1alpha1.FooSpec{DeploymentName: "evil", Replicas: ptr.Int32(7)}
	if code, body, err := env.SendObject(context.Background(), "update", forged, "foos"); err != nil || code != http.StatusOK {
		t.Fatalf("forged Foo answered %d %s %v, want 200 (the real Foo reconciled)", code, body, err)
	}
	forgedDep := sentDeployment(dep)
	// A version the reconciler never wrote: one it wrote would be answered
	// 202 as its own write, which skips only the forged event.
	forgedDep.ResourceVersion = "999999999"
	forgedDep.Status = appsv1.DeploymentStatus{
		ObservedGeneration: dep.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}},
	}
	if code, body, err := env.SendObject(context.Background(), "update", forgedDep, "deployments"); err != nil || code != http.StatusOK {
		t.Fatalf("forged Deployment answered %d %s %v, want 200 (the real Foo reconciled)", code, body, err)
	}

	if _, err := getDeployment(context.Background(), ns, "evil"); err == nil {
		t.Error("the forged spec's Deployment was created")
	}
	afterDep, err := getDeployment(context.Background(), ns, "real")
	if err != nil {
		t.Fatal(err)
	}
	after, err := getFoo(context.Background(), ns, "real")
	if err != nil {
		t.Fatal(err)
	}
	if afterDep.ResourceVersion != dep.ResourceVersion || *afterDep.Spec.Replicas != 2 {
		t.Errorf("the forged Foo changed the Deployment: replicas %d, resourceVersion %s → %s",
			*afterDep.Spec.Replicas, dep.ResourceVersion, afterDep.ResourceVersion)
	}
	if after.ResourceVersion != foo.ResourceVersion || after.Status.AvailableReplicas != 0 || after.Status.IsReady() {
		t.Errorf("the forged Deployment reached the Foo's status: available %d, ready %v, resourceVersion %s → %s",
			after.Status.AvailableReplicas, after.Status.IsReady(), foo.ResourceVersion, after.ResourceVersion)
	}
}

// An owned Deployment's stale update event, delivered after the Deployment
// was deleted (and its delete event lost), is answered once the Deployment
// exists again: a 2xx means converged.
func TestStaleDeploymentEventAfterItsDeletion(t *testing.T) {
	ns := namespace(t)
	createFoo(t, newFoo(ns, "stale", "stale", 1))
	_, dep := convergedFoo(t, ns, "stale")

	// The delete event is lost: nothing receives it.
	before := env.AdapterDrops()
	if err := env.StopReconciler(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // back to the default for the tests after this one
		_ = env.StopReconciler()
		if err := env.StartReconciler(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if err := env.Kube.AppsV1().Deployments(ns).Delete(context.Background(), "stale", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the adapter drops the delete event", func(context.Context) (bool, string) {
		return env.AdapterDrops() > before, fmt.Sprintf("%d drops", env.AdapterDrops()-before)
	})
	if err := env.StartReconciler(context.Background(), "--cold-start-resync=false"); err != nil {
		t.Fatal(err)
	}

	code, body, err := env.SendObject(context.Background(), "update", sentDeployment(dep), "deployments")
	if err != nil || code != http.StatusOK {
		t.Fatalf("stale Deployment event answered %d %s %v, want 200", code, body, err)
	}
	if _, err := getDeployment(context.Background(), ns, "stale"); err != nil {
		t.Errorf("answered 200 while the Deployment is missing: %v", err)
	}
}

// A Foo refused a name that another Foo's Deployment holds gets it as soon as
// that Foo is deleted and its Deployment collected: no resync needed.
func TestRefusedFooGetsTheNameWhenItsHolderGoes(t *testing.T) {
	ns := namespace(t)
	createFoo(t, newFoo(ns, "holder", "shared", 1))
	_, held := convergedFoo(t, ns, "holder")
	createFoo(t, newFoo(ns, "waiting", "shared", 3))
	waitRefused(t, ns, "waiting")

	if err := env.Foos.SamplecontrollerV1alpha1().Foos(ns).Delete(context.Background(), "holder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The garbage collector, not the reconciler, takes the holder's
	// Deployment: after the API server's restart in an earlier test it may
	// take up to its next discovery (see TestDeletedFooTakesItsDeployment).
	// The Foo's wait starts when the name is free.
	deleted := time.Now()
	clustertest.Eventually(t, 2*time.Minute, "the holder's deployment is collected", func(ctx context.Context) (bool, string) {
		d, err := getDeployment(ctx, ns, "shared")
		if apierrs.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return d.UID != held.UID, "still the holder's"
	})
	t.Logf("the garbage collector took the holder's deployment within %s", time.Since(deleted).Round(time.Millisecond))
	_, d := convergedFoo(t, ns, "waiting")
	if ref := metav1.GetControllerOf(d); ref == nil || ref.Name != "waiting" {
		t.Errorf("deployment shared is controlled by %v, want the Foo waiting", ref)
	}
}

// A Foo refused a name that a foreign Deployment holds converges at the next
// resync once that Deployment is gone (nothing reports that deletion): the
// PingSource's schedule bounds it.
func TestRefusedFooConvergesAtTheNextResync(t *testing.T) {
	ns := namespace(t)
	refusedByAForeignDeploymentNowGone(t, ns)

	if _, err := env.Resync(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The resync is answered once every Foo that needed work is reconciled.
	d, err := getDeployment(context.Background(), ns, "foreign")
	if err != nil {
		t.Fatalf("after the resync: %v", err)
	}
	if ref := metav1.GetControllerOf(d); ref == nil || ref.Name != "refused" {
		t.Errorf("deployment foreign is controlled by %v, want the Foo refused", ref)
	}
}

// waitRefused waits until the Foo reports that its Deployment's name is taken.
func waitRefused(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, "Foo "+name+" refused its Deployment", func(ctx context.Context) (bool, string) {
		f, err := getFoo(ctx, ns, name)
		if err != nil {
			return false, err.Error()
		}
		c := f.Status.GetCondition(samplesv1alpha1.FooConditionDeploymentReady)
		return c != nil && c.Reason == samplesv1alpha1.ReasonDeploymentNotOwned, fmt.Sprintf("condition %+v", c)
	})
}

// A Foo refused a name that a foreign Deployment holds, whose status reports
// its generation, converges when a label is put on it once that Deployment
// is gone (nothing reports that deletion): its update is not skipped, since
// DeploymentNotOwned is a state a reconcile may change. No resync runs here.
func TestALabelRetriesARefusedFoo(t *testing.T) {
	ns := namespace(t)
	refusedByAForeignDeploymentNowGone(t, ns)

	// What `kubectl label foo refused poke=1` sends.
	if _, err := env.Foos.SamplecontrollerV1alpha1().Foos(ns).Patch(context.Background(), "refused", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"poke":"1"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the refused Foo takes the name", func(ctx context.Context) (bool, string) {
		d, err := getDeployment(ctx, ns, "foreign")
		if err != nil {
			return false, err.Error()
		}
		ref := metav1.GetControllerOf(d)
		return ref != nil && ref.Name == "refused", fmt.Sprintf("controlled by %v", ref)
	})
}

// Forged deletes of a live Deployment, and a real one delivered again once
// its Foo made the Deployment anew, cost the API server one read of the
// Deployment each, and nothing more: the receiver sees it was not deleted,
// or was made again, and reconciles nobody, even when a Foo of its
// namespace waits for a name.
func TestAForgedOrRepeatedDeleteCostsOneRead(t *testing.T) {
	ns := namespace(t)
	createFoo(t, newFoo(ns, "real", "real", 1))
	_, dep := convergedFoo(t, ns, "real")
	refusedByAForeignDeploymentNowGone(t, ns) // a Foo of ns waits for a name

	sendDeletes := func(what string, d *appsv1.Deployment) {
		t.Helper()
		_, from := reconcilerAudit(t, 0)
		const n = 20
		for range n {
			if code, body, err := env.SendObject(context.Background(), "delete", sentDeployment(d), "deployments"); err != nil || code != http.StatusAccepted {
				t.Fatalf("%s delete answered %d %s %v, want 202 (ignored)", what, code, body, err)
			}
		}
		// The audit log is written before each response: every request the
		// events caused is there once they are answered.
		events, _ := reconcilerAudit(t, from)
		count := map[string]int{}
		for _, e := range events {
			if e.ObjectRef.Namespace == ns {
				count[e.Verb+" "+e.ObjectRef.Resource]++
			}
		}
		t.Logf("%d %s deletes made %v", n, what, count)
		if count["get deployments"] > n || len(count) > 1 {
			t.Errorf("%d %s deletes made %v; want at most one GET of the Deployment each, nothing else", n, what, count)
		}
	}
	sendDeletes("forged", dep)

	if err := env.Kube.AppsV1().Deployments(ns).Delete(context.Background(), dep.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment made anew", func(ctx context.Context) (bool, string) {
		d, err := getDeployment(ctx, ns, dep.Name)
		if err != nil {
			return false, err.Error()
		}
		return d.UID != dep.UID, "the old one"
	})
	convergedFoo(t, ns, "real")
	sendDeletes("repeated", dep)
}

// refusedByAForeignDeploymentNowGone makes the Foo "refused" of ns, refused
// the name "foreign" that a Deployment no Foo controls holds, then deletes
// that Deployment: no event reports that.
func refusedByAForeignDeploymentNowGone(t *testing.T, ns string) {
	t.Helper()
	if _, err := env.Kube.AppsV1().Deployments(ns).Create(context.Background(), foreignDeployment(ns, "foreign"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createFoo(t, newFoo(ns, "refused", "foreign", 1))
	waitRefused(t, ns, "refused")
	if err := env.Kube.AppsV1().Deployments(ns).Delete(context.Background(), "foreign", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// foreignDeployment is a Deployment no Foo controls.
func foreignDeployment(ns, name string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "other", Image: "other"}}},
			},
		},
	}
}
