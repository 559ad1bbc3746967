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

package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kind is one of the kinds of objects the bench makes.
type kind string

const (
	oursFoo    kind = "ours"    // our Foo (samplecontroller.knative.io)
	classicFoo kind = "classic" // the classic's Foo (samplecontroller.k8s.io)
	bar        kind = "bar"     // the example Bar operator's Bar
)

var (
	oursGVR    = schema.GroupVersionResource{Group: "samplecontroller.knative.io", Version: "v1alpha1", Resource: "foos"}
	classicGVR = schema.GroupVersionResource{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"}
	barGVR     = schema.GroupVersionResource{Group: "example.frugal-operator.dev", Version: "v1alpha1", Resource: "bars"}
)

// gvr is the kind's resource.
func (k kind) gvr() schema.GroupVersionResource {
	switch k {
	case classicFoo:
		return classicGVR
	case bar:
		return barGVR
	}
	return oursGVR
}

// object is an object of the kind: a Foo asks for 0 replicas.
func (k kind) object(ns, name string) *unstructured.Unstructured {
	kindName, spec := "Foo", map[string]any{"deploymentName": name, "replicas": int64(0)}
	if k == bar {
		kindName, spec = "Bar", map[string]any{"data": map[string]any{"greeting": "hello"}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": k.gvr().GroupVersion().String(),
		"kind":       kindName,
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       spec,
	}}
}

// batch is n objects of a kind in a namespace.
type batch struct {
	kind kind
	ns   string
}

// parallel runs f(0..n-1) on 32 workers and returns the first error.
func parallel(n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	work := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range work {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return first
}

// objectName is the name of the i-th object of a kind.
func objectName(k kind, i int) string {
	if k == bar {
		return fmt.Sprintf("bar-%05d", i)
	}
	return fmt.Sprintf("foo-%05d", i)
}

// create makes n objects of the batch's kind in its namespace; one there
// already (a run started again) is left as it is.
func create(ctx context.Context, b batch, n int) error {
	err := parallel(n, func(i int) error {
		name := objectName(b.kind, i)
		_, err := dyn.Resource(b.kind.gvr()).Namespace(b.ns).Create(ctx, b.kind.object(b.ns, name), metav1.CreateOptions{})
		if apierrs.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("creating %d objects (%s) in %s: %w", n, b.kind, b.ns, err)
	}
	return nil
}

// populate makes n objects of each batch and waits until all converged.
func populate(ctx context.Context, n int, batches []batch) error {
	for _, b := range batches {
		if err := create(ctx, b, n); err != nil {
			return err
		}
	}
	for _, b := range batches {
		err := poll(ctx, 2*time.Second, 20*time.Minute, fmt.Sprintf("%d objects (%s) in %s converged", n, b.kind, b.ns), func(ctx context.Context) (bool, error) {
			p, err := progressOf(ctx, b)
			return err == nil && p.Objects == n && p.Reconciled == n, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// progress counts a namespace's objects of a kind by how far they went.
type progress struct {
	// Seconds since the burst's start (bursts only).
	Seconds float64 `json:"seconds"`
	Objects int     `json:"objects"`
	// Reconciled: ours and Bars, status.observedGeneration ==
	// metadata.generation; the classic's, its Deployment exists and the Foo
	// has a status.
	Reconciled int `json:"reconciled"`
	// Observed: Deployments (Foos only) whose status is of their generation.
	Observed int `json:"deploymentsObserved"`
	// Ready: ours and Bars whose Ready condition is True.
	Ready int `json:"ready"`
}

// progressOf lists the batch's namespace, from the API server's watch
// cache, and counts how far its objects went.
func progressOf(ctx context.Context, b batch) (progress, error) {
	var p progress
	cached := metav1.ListOptions{ResourceVersion: "0"}
	deployments := map[string]bool{}
	if b.kind != bar {
		deps, err := kube.AppsV1().Deployments(b.ns).List(ctx, cached)
		if err != nil {
			return p, fmt.Errorf("listing the Deployments of %s: %w", b.ns, err)
		}
		for _, d := range deps.Items {
			deployments[d.Name] = true
			if d.Generation > 0 && d.Status.ObservedGeneration == d.Generation {
				p.Observed++
			}
		}
	}
	list, err := dyn.Resource(b.kind.gvr()).Namespace(b.ns).List(ctx, cached)
	if err != nil {
		return p, fmt.Errorf("listing the %s objects of %s: %w", b.kind, b.ns, err)
	}
	p.Objects = len(list.Items)
	for i := range list.Items {
		u := &list.Items[i]
		if b.kind == classicFoo {
			name, _, _ := unstructured.NestedString(u.Object, "spec", "deploymentName")
			if u.Object["status"] != nil && deployments[name] {
				p.Reconciled++
			}
			continue
		}
		if generationObserved(u) {
			p.Reconciled++
		}
		// Our Foos' Ready as FooStatus.IsReady says it; Bars' of their generation.
		if readyCondition(u) && (b.kind == oursFoo || generationObserved(u)) {
			p.Ready++
		}
	}
	return p, nil
}

// emptyNamespace deletes the Foos (of the kind) of a burst's namespace,
// the classic's once timed or those an interrupted run left, and waits
// until they, their Deployments and their ReplicaSets are gone.
func emptyNamespace(ctx context.Context, b batch) error {
	p, err := progressOf(ctx, b)
	if err != nil || p.Objects == 0 {
		return err
	}
	logf("  deleting the %d Foos of %s", p.Objects, b.ns)
	if err := dyn.Resource(b.kind.gvr()).Namespace(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting the Foos of %s: %w", b.ns, err)
	}
	// Empty of the ReplicaSets too: the garbage collector deletes them
	// after their Deployments, and would still be at it during the burst.
	return poll(ctx, 2*time.Second, 20*time.Minute, b.ns+" empty", func(ctx context.Context) (bool, error) {
		deps, err := kube.AppsV1().Deployments(b.ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || len(deps.Items) > 0 {
			return false, nil
		}
		sets, err := kube.AppsV1().ReplicaSets(b.ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || len(sets.Items) > 0 {
			return false, nil
		}
		p, err := progressOf(ctx, b)
		return err == nil && p.Objects == 0, nil
	})
}
