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

package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
)

var (
	// oursGVR is this project's Foo; classicGVR the sample-controller's.
	oursGVR    = schema.GroupVersionResource{Group: "samplecontroller.knative.io", Version: "v1alpha1", Resource: "foos"}
	classicGVR = schema.GroupVersionResource{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"}
)

// gvr is the Foos' resource of one side.
func gvr(classic bool) schema.GroupVersionResource {
	if classic {
		return classicGVR
	}
	return oursGVR
}

// parallel runs f(0..n-1) on 32 workers and returns the first error.
func parallel(n int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

// namespace makes the namespace unless it exists.
func (r *run) namespace(ctx context.Context, name string) error {
	_, err := r.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrs.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// populate makes, in namespace bench, N Foos of each controller with
// their Deployments, and N unrelated Deployments (which the classic's
// informer caches).
func (r *run) populate(ctx context.Context) error {
	r.cfg.Log("N=%d: creating %d Foos of each kind with their Deployments, and %d unrelated Deployments", r.n, r.n, r.n)
	start := time.Now()
	if err := r.namespace(ctx, "bench"); err != nil {
		return err
	}
	err := parallel(r.n, func(i int) error {
		for _, classic := range []bool{false, true} {
			if err := r.createWithDeployment(ctx, classic, "bench", fmt.Sprintf("%s-%d", side(classic), i)); err != nil {
				return err
			}
		}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%d", i), Namespace: "bench"},
			Spec:       classicDeploymentSpec(fmt.Sprintf("other-%d", i)),
		}
		_, err := r.kube.AppsV1().Deployments("bench").Create(ctx, d, metav1.CreateOptions{})
		return err
	})
	r.cfg.Log("N=%d: populated in %.1fs", r.n, time.Since(start).Seconds())
	return err
}

// side names the Foos of one side.
func side(classic bool) string {
	if classic {
		return "classic"
	}
	return "ours"
}

// createFoo creates a Foo of one side asking for one replica.
func (r *run) createFoo(ctx context.Context, classic bool, ns, name string) (*unstructured.Unstructured, error) {
	g := gvr(classic)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": g.GroupVersion().String(),
		"kind":       "Foo",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"deploymentName": name, "replicas": int64(1)},
	}}
	return r.dyn.Resource(g).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
}

// createWithDeployment creates a Foo and its Deployment as its controller
// makes it.
func (r *run) createWithDeployment(ctx context.Context, classic bool, ns, name string) error {
	u, err := r.createFoo(ctx, classic, ns, name)
	if err != nil {
		return err
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: classicGVR.GroupVersion().String(), Kind: "Foo", Name: name, UID: u.GetUID(),
				Controller: ptr.Bool(true), BlockOwnerDeletion: ptr.Bool(true),
			}},
		},
		Spec: classicDeploymentSpec(name),
	}
	if !classic {
		var f samplesv1alpha1.Foo
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &f); err != nil {
			return err
		}
		d = resources.MakeDeployment(&f)
	}
	_, err = r.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	return err
}

// classicDeploymentSpec is the Deployment the sample-controller makes.
func classicDeploymentSpec(name string) appsv1.DeploymentSpec {
	labels := map[string]string{"app": "nginx", "controller": name}
	return appsv1.DeploymentSpec{
		Replicas: ptr.Int32(1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
		},
	}
}

// written tells whether a Foo's controller has written its status: the
// classic's any status, ours one of a generation at least min.
func written(u *unstructured.Unstructured, classic bool, min int64) bool {
	if classic {
		return u.Object["status"] != nil
	}
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return observed >= min && observed == u.GetGeneration()
}

// waitOursSettled waits until n of our Foos of ns report their generation.
func (r *run) waitOursSettled(ctx context.Context, ns string, n int) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := r.dyn.Resource(oursGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		done := 0
		for i := range list.Items {
			if written(&list.Items[i], false, 0) {
				done++
			}
		}
		return done >= n, nil
	})
}

// reconciled tells whether a Foo has its Deployment and a written status.
func (r *run) reconciled(ctx context.Context, classic bool, ns, name string) bool {
	if _, err := r.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		return false
	}
	u, err := r.dyn.Resource(gvr(classic)).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	return err == nil && written(u, classic, 1)
}
