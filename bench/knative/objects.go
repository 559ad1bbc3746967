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
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kind is a kind of object the bench makes: our Foo, the classic's, or the
// example Bar operator's Bar.
type kind string

const oursFoo, classicFoo, bar kind = "ours", "classic", "bar"

func (k kind) gvr() schema.GroupVersionResource {
	return map[kind]schema.GroupVersionResource{
		oursFoo:    {Group: "samplecontroller.knative.io", Version: "v1alpha1", Resource: "foos"},
		classicFoo: {Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"},
		bar:        {Group: "example.frugal-operator.dev", Version: "v1alpha1", Resource: "bars"},
	}[k]
}

// create makes an object of the kind; a Foo asks for 0 replicas.
func (k kind) create(ctx context.Context, ns, name string) error {
	kindName, spec := "Foo", map[string]any{"deploymentName": name, "replicas": int64(0)}
	if k == bar {
		kindName, spec = "Bar", map[string]any{"data": map[string]any{"greeting": "hello"}}
	}
	_, err := dyn.Resource(k.gvr()).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": k.gvr().GroupVersion().String(), "kind": kindName, "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	}}, metav1.CreateOptions{})
	return err
}

// ensureNamespaces makes the bench's namespaces that do not exist.
func ensureNamespaces(ctx context.Context) error {
	for _, name := range benchNamespaces {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil && !apierrs.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// createAndTime creates one of our Foos and times it until its Deployment
// exists.
func createAndTime(ctx context.Context, ns, name string, within time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := oursFoo.create(ctx, ns, name); err != nil {
		return 0, err
	}
	err := poll(ctx, 50*time.Millisecond, within, "the Deployment of "+name, func(ctx context.Context) (bool, error) {
		_, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	return time.Since(start), err
}

// batch is objects of a kind in a namespace.
type batch struct {
	kind kind
	ns   string
}

// create makes n objects of the batch, 32 at a time; one there already (a
// run started again) is left as it is.
func (b batch) create(ctx context.Context, n int) error {
	var g errgroup.Group
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			if err := b.kind.create(ctx, b.ns, fmt.Sprintf("%.3s-%05d", b.kind.gvr().Resource, i)); !apierrs.IsAlreadyExists(err) {
				return err
			}
			return nil
		})
	}
	return g.Wait()
}

// populate is a step that makes n objects of each batch and waits until all
// are reconciled.
func populate(n int, batches ...batch) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, b := range batches {
			logf("%d objects (%s) in %s", n, b.kind, b.ns)
			if err := b.create(ctx, n); err != nil {
				return err
			}
		}
		for _, b := range batches {
			err := poll(ctx, 2*time.Second, 20*time.Minute, "the objects of "+b.ns+" reconciled", func(ctx context.Context) (bool, error) {
				p, err := b.progress(ctx)
				return err == nil && p.objects == n && p.reconciled == n, nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// progress counts a batch's objects by how far they went: reconciled (ours
// and Bars, their status of their generation; the classic's, a status and
// their Deployment made), their Deployments observed (status of their
// generation), Ready (ours as FooStatus.IsReady says it; Bars of their
// generation).
type progress struct{ objects, reconciled, observed, ready int }

// progress counts from the API server's watch cache.
func (b batch) progress(ctx context.Context) (progress, error) {
	cached, deployments := metav1.ListOptions{ResourceVersion: "0"}, map[string]bool{}
	deps, err := kube.AppsV1().Deployments(b.ns).List(ctx, cached)
	if err != nil {
		return progress{}, err
	}
	list, err := dyn.Resource(b.kind.gvr()).Namespace(b.ns).List(ctx, cached)
	if err != nil {
		return progress{}, err
	}
	p := progress{objects: len(list.Items)}
	for _, d := range deps.Items {
		if deployments[d.Name] = true; d.Generation > 0 && d.Status.ObservedGeneration == d.Generation {
			p.observed++
		}
	}
	for _, u := range list.Items {
		name, _, _ := unstructured.NestedString(u.Object, "spec", "deploymentName")
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		current := observed == u.GetGeneration()
		if b.kind == classicFoo && u.Object["status"] != nil && deployments[name] || b.kind != classicFoo && current {
			p.reconciled++
		}
		if b.kind != classicFoo && (current || b.kind == oursFoo) && slices.ContainsFunc(conditions, func(c any) bool {
			m, _ := c.(map[string]any)
			return m["type"] == "Ready" && m["status"] == "True"
		}) {
			p.ready++
		}
	}
	return p, nil
}

// empty deletes the batch's objects and waits until they, their
// Deployments and ReplicaSets are gone (the garbage collector deletes those
// after, and would still be at it during a burst).
func (b batch) empty(ctx context.Context) error {
	if p, err := b.progress(ctx); err != nil || p.objects == 0 {
		return err
	}
	logf("emptying %s", b.ns)
	if err := dyn.Resource(b.kind.gvr()).Namespace(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	return poll(ctx, 2*time.Second, 20*time.Minute, b.ns+" empty", func(ctx context.Context) (bool, error) {
		deps, err1 := kube.AppsV1().Deployments(b.ns).List(ctx, metav1.ListOptions{Limit: 1})
		sets, err2 := kube.AppsV1().ReplicaSets(b.ns).List(ctx, metav1.ListOptions{Limit: 1})
		p, err3 := b.progress(ctx)
		return errors.Join(err1, err2, err3) == nil && len(deps.Items)+len(sets.Items)+p.objects == 0, nil
	})
}
