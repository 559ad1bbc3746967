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
	"slices"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	"github.com/frugal-operator/foo-operator/test/clustertest"
)

// 1. The release made a Ready Knative Service and Ready sources, and
// with nothing to do the Service goes to zero pods.
func TestInstalledAndScalesToZero(t *testing.T) {
	clustertest.Eventually(t, 3*time.Minute, "the Knative Service is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, ksvcGVR, system, service)
	})
	for _, name := range []string{"foos"} {
		clustertest.Eventually(t, 3*time.Minute, "ApiServerSource "+name+" is Ready", func(ctx context.Context) (bool, string) {
			return ready(ctx, sourceGVR, system, name)
		})
	}
	clustertest.Eventually(t, 3*time.Minute, "the PingSource is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, pingGVR, system, "foo-resync")
	})
	atZero(t, system, service)
}

// 2. A Foo created while the reconciler is at zero: the adapter's event
// wakes a pod through the activator, the Deployment is made and becomes
// Available, the Foo is Ready. Then the same with the pod warm. The times
// from the create to the Deployment existing are logged.
func TestFooWakesTheReconciler(t *testing.T) {
	const tries = 5
	var cold []time.Duration
	for i := range tries {
		ns := namespace(t)
		atZero(t, system, service)
		took := createAndTime(t, newFoo(ns, "web", "web", 1))
		cold = append(cold, took)
		t.Logf("from zero, try %d: the Deployment existed %v after the create", i+1, took)
		available(t, ns, "web", 1)
	}
	ns := namespace(t)
	warm := createAndTime(t, newFoo(ns, "warm", "warm", 1))
	available(t, ns, "warm", 1)
	slices.Sort(cold)
	t.Logf("create to Deployment: from zero p50 %v (min %v, max %v, %d tries); warm %v",
		cold[len(cold)/2], cold[0], cold[len(cold)-1], len(cold), warm)
}

// createAndTime creates the Foo and returns how long its Deployment took to exist.
func createAndTime(t *testing.T, f *samplesv1alpha1.Foo) time.Duration {
	t.Helper()
	start := time.Now()
	createFoo(t, f)
	clustertest.Eventually(t, 3*time.Minute, "the Deployment exists", func(ctx context.Context) (bool, string) {
		_, err := kube.AppsV1().Deployments(f.Namespace).Get(ctx, f.Spec.DeploymentName, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return time.Since(start)
}

// available waits until the Foo's Deployment is Available with want
// replicas (nginx:latest, served by the cluster's registry) and the Foo
// reports them and Ready=True.
func available(t *testing.T, ns, name string, want int32) {
	t.Helper()
	availableWithin(t, 3*time.Minute, ns, name, want)
}

func availableWithin(t *testing.T, within time.Duration, ns, name string, want int32) {
	t.Helper()
	clustertest.Eventually(t, within, fmt.Sprintf("Foo %s/%s Ready with %d available", ns, name, want), func(ctx context.Context) (bool, string) {
		f, err := foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, f.Spec.DeploymentName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return *d.Spec.Replicas == want && d.Status.AvailableReplicas == want &&
				f.Status.AvailableReplicas == want && f.Status.IsReady(),
			fmt.Sprintf("deployment %d/%d available, Foo status %+v", d.Status.AvailableReplicas, *d.Spec.Replicas, f.Status)
	})
}

// deploymentReplicas waits until the Deployment has want replicas in its spec.
func deploymentReplicas(t *testing.T, ns, name string, want int32) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	clustertest.Eventually(t, 2*time.Minute, fmt.Sprintf("deployment %s/%s has %d replicas", ns, name, want), func(ctx context.Context) (bool, string) {
		var err error
		if d, err = kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		return *d.Spec.Replicas == want, fmt.Sprintf("replicas %d", *d.Spec.Replicas)
	})
	return d
}

// 3. The sample-controller's lifecycle, on the real cluster: replicas
// changed, drift reverted, a deleted Deployment recreated, a Deployment the
// Foo does not own left alone, a deleted Foo's Deployment collected.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createFoo(t, newFoo(ns, "web", "web", 1))
	available(t, ns, "web", 1)

	patch := func(p string) {
		t.Helper()
		if _, err := foos.SamplecontrollerV1alpha1().Foos(ns).Patch(ctx, "web", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch(`{"spec":{"replicas":2}}`)
	available(t, ns, "web", 2)

	// Drift: the Deployment scaled by hand is scaled back.
	if _, err := kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deploymentReplicas(t, ns, "web", 2)

	// Deleted: made again.
	old, err := kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := kube.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 2*time.Minute, "the deployment is made again", func(ctx context.Context) (bool, string) {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.UID != old.UID, "still the old one"
	})
	available(t, ns, "web", 2)

	// Not owned: a Deployment of that name that no Foo controls is left alone.
	theirs := resources.MakeDeployment(newFoo(ns, "x", "taken", 1))
	theirs.OwnerReferences = nil
	if theirs, err = kube.AppsV1().Deployments(ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createFoo(t, newFoo(ns, "late", "taken", 3))
	clustertest.Eventually(t, 2*time.Minute, "the Foo reports DeploymentNotOwned", func(ctx context.Context) (bool, string) {
		f, err := foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "late", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := f.Status.GetCondition(samplesv1alpha1.FooConditionReady)
		return c != nil && c.IsFalse() && c.Reason == samplesv1alpha1.ReasonDeploymentNotOwned, fmt.Sprintf("%+v", c)
	})
	clustertest.Eventually(t, time.Minute, "a Warning event on the Foo", func(ctx context.Context) (bool, string) {
		evs, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=late"})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "ErrResourceExists" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none a Warning ErrResourceExists", len(evs.Items))
	})
	if d, err := kube.AppsV1().Deployments(ns).Get(ctx, "taken", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if d.ResourceVersion != theirs.ResourceVersion && (len(d.OwnerReferences) != 0 || *d.Spec.Replicas != 1) {
		t.Errorf("the foreign Deployment was changed: owners %v, replicas %d", d.OwnerReferences, *d.Spec.Replicas)
	}

	// Deleted Foo: the garbage collector takes its Deployment.
	if err := foos.SamplecontrollerV1alpha1().Foos(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 2*time.Minute, "the deployment is collected", func(ctx context.Context) (bool, string) {
		_, err := kube.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return apierrs.IsNotFound(err), fmt.Sprint(err)
	})
}

// 4. The adapter's pod deleted: what changes while no adapter watches, no
// one sends (the new adapter's first list sends nothing). The node is
// cordoned meanwhile, so that the new pod waits until the changes are made.
// Once the new adapter's pod is ready, the source's event of that pod asks
// the reconciler for a resync, and every Foo created or changed meanwhile
// converges within 10 s of the adapter delivering again. The reconciler
// keeps a pod throughout, and the resync's PingSource is off: neither a cold
// start's resync nor the ping's does it.
func TestAnAdapterPodDeletedLosesNothing(t *testing.T) {
	ctx := context.Background()
	setResyncSchedule(t, "0 0 1 1 *")
	keepAPod(t)
	ns := namespace(t)
	createFoo(t, newFoo(ns, "changed", "changed", 1))
	deploymentReplicas(t, ns, "changed", 1)
	pods, err := kube.CoreV1().Pods(system).List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
	if err != nil {
		t.Fatal(err)
	}
	cordon(t)
	for _, p := range pods.Items {
		if err := kube.CoreV1().Pods(system).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	clustertest.Eventually(t, 2*time.Minute, "no adapter runs", func(ctx context.Context) (bool, string) {
		list, err := kube.CoreV1().Pods(system).List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range list.Items {
			if p.Status.Phase != corev1.PodPending {
				return false, p.Name + " is " + string(p.Status.Phase)
			}
		}
		return true, ""
	})
	const made = 5
	for i := range made {
		createFoo(t, newFoo(ns, fmt.Sprintf("new-%d", i), fmt.Sprintf("new-%d", i), 1))
	}
	patchFoo(t, ns, "changed", `{"spec":{"replicas":2}}`)
	uncordon(t)
	sourcesDeliver(t, ns)
	delivering := time.Now()
	clustertest.Eventually(t, 2*time.Minute, "every Foo made or changed without an adapter converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, made+1)
	})
	took := time.Since(delivering)
	if took > 10*time.Second {
		t.Errorf("converged %v after the adapter delivered again, want within 10 s", took.Round(time.Millisecond))
	}
	t.Logf("the Foos made and changed without an adapter converged %v after it delivered again", took.Round(time.Millisecond))
}

// keepAPod has the reconciler keep one pod (min-scale 1, a new revision)
// until the test ends.
func keepAPod(t *testing.T) {
	t.Helper()
	set := func(minScale string) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"autoscaling.knative.dev/min-scale":%q}}}}}`, minScale)
		if _, err := dyn.Resource(ksvcGVR).Namespace(system).Patch(context.Background(), service, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		clustertest.Eventually(t, 3*time.Minute, "the Knative Service is Ready", func(ctx context.Context) (bool, string) {
			return ready(ctx, ksvcGVR, system, service)
		})
	}
	set("1")
	t.Cleanup(func() { set("0") })
	clustertest.Eventually(t, 3*time.Minute, "one reconciler pod, of the new revision", func(ctx context.Context) (bool, string) {
		n, err := servingPods(ctx, system, service)
		return err == nil && n == 1, fmt.Sprintf("%d pods, %v", n, err)
	})
}

// cordon makes the one node unschedulable until uncordon, or the test's end.
func cordon(t *testing.T) {
	t.Helper()
	setUnschedulable(t, true)
	t.Cleanup(func() { setUnschedulable(t, false) })
}

func uncordon(t *testing.T) { t.Helper(); setUnschedulable(t, false) }

func setUnschedulable(t *testing.T, unschedulable bool) {
	t.Helper()
	nodes, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, unschedulable)
	for _, n := range nodes.Items {
		if _, err := kube.CoreV1().Nodes().Patch(context.Background(), n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// 5. A wake-up behind kube-controller-manager's backlog: 1000 Deployments no
// Foo owns are created (replicas 0), then at once, with the reconciler at
// zero, 50 Foos. The reconciler's pod waits for the deployment controller to
// get through the backlog (it scales the revision's Deployment), and the
// adapter's events wait for the pod or are dropped; every Foo converges
// all the same, none lost. The times are logged.
func TestAWakeUpBehindADeploymentBacklog(t *testing.T) {
	behindADeploymentBacklog(t)
}

// unrelatedDeployment is a Deployment of no Foo, with no Foo's label, of 0
// replicas.
func unrelatedDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.Int32(0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/unrelated"}}},
			},
		},
	}
}

// behindADeploymentBacklog is TestAWakeUpBehindADeploymentBacklog, in
// either wiring; the namespaces kept are the enclosing test's, which live on.
func behindADeploymentBacklog(t *testing.T, kept ...string) {
	const unrelated, n = 1000, 50
	ctx := context.Background()
	quiet(t, kept...) // no event of an earlier test's namespace going wakes the reconciler
	backlog := clustertest.Namespace(t, kube, "knative-e2e-backlog-")
	ns := namespace(t) // returns once the adapters list both namespaces
	atZero(t, system, service)

	start := time.Now()
	names := make(chan int)
	var g errgroup.Group
	for range 8 {
		g.Go(func() error {
			for i := range names {
				// Unrelated: without the label that the source selects
				// Deployments by, so that no event of theirs reaches the reconciler.
				d := unrelatedDeployment(fmt.Sprintf("unrelated-%d", i))
				if _, err := kube.AppsV1().Deployments(backlog).Create(ctx, d, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for i := range unrelated {
		names <- i
	}
	close(names)
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	if pods, err := servingPods(ctx, system, service); err != nil || pods != 0 {
		t.Fatalf("%d reconciler pods serve before the Foos are made (%v): not a wake-up from zero", pods, err)
	}
	for i := range n {
		createFoo(t, newFoo(ns, fmt.Sprintf("foo-%d", i), fmt.Sprintf("dep-%d", i), 0))
	}
	clustertest.Eventually(t, 10*time.Minute, fmt.Sprintf("the %d Foos converged", n), func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, n)
	})
	done := time.Since(created)
	// The pod that reconciled them still runs.
	woke := nextPod(t, created, time.Minute)
	t.Logf("%d unrelated Deployments created in %v; then %d Foos at zero: the reconciler's pod made %v after the first, all converged %v after it",
		unrelated, created.Sub(start).Round(time.Millisecond), n, woke.Sub(created.Truncate(time.Second)), done.Round(time.Second))
}
