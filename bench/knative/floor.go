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
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The floor pair measures what the shared stream's data plane costs a
// burst whoever reconciles it: the classic's burst once with the stream
// carrying the events of its Foos and Deployments (through the Broker, the
// Foo operator's Trigger and Knative Serving's ingress and activator to our
// reconciler, which answers each at once: a kind it does not reconcile, a
// Deployment none of its Foos controls), once without. No operator the
// stream feeds can do a burst faster than the classic does while the
// stream carries the burst's events: the ratio of the two is the stream's
// floor on this node.

// carriedRole is the ClusterRole that lets the stream's adapter read the
// classic's Foos, aggregated into the stream's by its label as a member's.
const carriedRole = "bench-classic-carried"

// carriedAPIVersion is the apiVersion of the classic's Foos, as events carry it.
const carriedAPIVersion = "samplecontroller.k8s.io/v1alpha1"

// carriedDeployments selects the Deployments the stream carries for the
// classic: every one without the Foo operator's label (its Deployments'
// owner, config/600-sources.yaml's selector) or a revision's.
const carriedDeployments = "!samplecontroller.knative.io/foo,!serving.knative.dev/revision"

var triggerGVR = schema.GroupVersionResource{Group: "eventing.knative.dev", Version: "v1", Resource: "triggers"}

// carryClassic makes the stream carry the classic's events, as a member
// would join it, but with no Trigger of its own (one more Trigger would
// cost every event of the stream one more delivery, which ours do not
// pay): the adapter may read the classic's Foos, its ApiServerSource
// watches them and the classic's Deployments, and the Foo operator's
// Trigger lets the classic's Foos through (its Deployments pass already).
// The sample-controller labels only its Deployments' pod template and
// selector, not the Deployments themselves: the source watches every
// Deployment without the Foo operator's label (those it watches already,
// as that member's entry), so each Deployment is carried once, and
// without Knative Serving's revision label (the reconcilers' own: each
// scaling of ours would wake it again). The new adapter sends an add for every
// classic object there already: the burst's preparation waits them out.
func carryClassic(ctx context.Context) error {
	if err := grantClassic(ctx); err != nil {
		return err
	}
	if err := watchClassic(ctx); err != nil {
		return err
	}
	if err := letClassicThrough(ctx); err != nil {
		return err
	}
	return streamAdapterCarries(ctx, true)
}

// grantClassic lets the stream's adapter read the classic's Foos, through
// a ClusterRole aggregated into its own.
func grantClassic(ctx context.Context) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: carriedRole, Labels: map[string]string{"stream.frugal-operator.dev/aggregate-to-watcher": "true"}},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{classicGVR.Group}, Resources: []string{classicGVR.Resource}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrs.IsAlreadyExists(err) {
		return fmt.Errorf("granting the stream's adapter the classic's Foos: %w", err)
	}
	return poll(ctx, time.Second, 2*time.Minute, "the stream's adapter's role with the classic's Foos", func(ctx context.Context) (bool, error) {
		r, err := kube.RbacV1().ClusterRoles().Get(ctx, "operator-stream-watcher", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, rule := range r.Rules {
			if len(rule.APIGroups) == 1 && rule.APIGroups[0] == classicGVR.Group {
				return true, nil
			}
		}
		return false, nil
	})
}

// watchClassic adds the classic's Foos and Deployments to the stream's
// ApiServerSource.
func watchClassic(ctx context.Context) error {
	sources := dyn.Resource(sourceGVR).Namespace(streamNS)
	u, err := sources.Get(ctx, "operators", metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the stream's ApiServerSource: %w", err)
	}
	selector, err := metav1.ParseToLabelSelector(carriedDeployments)
	if err != nil {
		return err
	}
	deployments, err := runtime.DefaultUnstructuredConverter.ToUnstructured(selector)
	if err != nil {
		return err
	}
	watched, _, _ := unstructured.NestedSlice(u.Object, "spec", "resources")
	watched = append(watched,
		map[string]any{"apiVersion": carriedAPIVersion, "kind": "Foo"},
		map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "selector": deployments},
	)
	if err := unstructured.SetNestedSlice(u.Object, watched, "spec", "resources"); err != nil {
		return err
	}
	if _, err := sources.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("adding the classic's kinds to the stream's ApiServerSource: %w", err)
	}
	return nil
}

// letClassicThrough adds the classic's Foos to the any filter of the Foo
// operator's Trigger (its Deployments pass already).
func letClassicThrough(ctx context.Context) error {
	triggers := dyn.Resource(triggerGVR).Namespace(streamNS)
	u, err := triggers.Get(ctx, fooReconciler.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the Foo operator's Trigger: %w", err)
	}
	filters, _, _ := unstructured.NestedSlice(u.Object, "spec", "filters")
	added := false
	for _, f := range filters {
		if f, ok := f.(map[string]any); ok && f["any"] != nil {
			f["any"] = append(f["any"].([]any), map[string]any{"exact": map[string]any{"kind": "Foo", "apiversion": carriedAPIVersion}})
			added = true
		}
	}
	if !added {
		return fmt.Errorf("the Foo operator's Trigger has no any filter to add the classic's Foos to")
	}
	if err := unstructured.SetNestedSlice(u.Object, filters, "spec", "filters"); err != nil {
		return err
	}
	if _, err := triggers.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("letting the classic's Foos through the Foo operator's Trigger: %w", err)
	}
	return nil
}

// uncarryClassic takes the stream back as its kustomization has it, and
// the adapter's role with it.
func uncarryClassic(ctx context.Context) error {
	if err := kubectl("apply", "-k", overlayDir); err != nil {
		return err
	}
	if err := kube.RbacV1().ClusterRoles().Delete(ctx, carriedRole, metav1.DeleteOptions{}); err != nil && !apierrs.IsNotFound(err) {
		return fmt.Errorf("deleting %s: %w", carriedRole, err)
	}
	return streamAdapterCarries(ctx, false)
}

// streamAdapterCarries waits until the stream's adapter Deployment is
// rolled out with the classic's Foos in its configuration, or without.
func streamAdapterCarries(ctx context.Context, carries bool) error {
	what := "the stream's adapter rolled out without the classic's Foos"
	if carries {
		what = "the stream's adapter rolled out with the classic's Foos"
	}
	return poll(ctx, time.Second, 5*time.Minute, what, func(ctx context.Context) (bool, error) {
		deps, err := kube.AppsV1().Deployments(streamNS).List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
		if err != nil || len(deps.Items) != 1 {
			return false, nil
		}
		d := &deps.Items[0]
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "K_SOURCE_CONFIG" {
				return rolledOut(d) && strings.Contains(e.Value, classicGVR.Group) == carries, nil
			}
		}
		return false, nil
	})
}

// checkCarried fails unless the stream's entry for the classic's
// Deployments selects every Deployment of namespace ns.
func checkCarried(ctx context.Context, ns string) error {
	all, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	carried, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: carriedDeployments})
	if err != nil {
		return err
	}
	if len(all.Items) == 0 || len(carried.Items) != len(all.Items) {
		return fmt.Errorf("the stream carried %d of the %d Deployments of %s", len(carried.Items), len(all.Items), ns)
	}
	return nil
}

// floorPairs runs the floor pair twice (floor.go), in turn: the classic
// with the stream carrying its events, then alone; alone, then carried.
func floorPairs(ctx context.Context, r *results) error {
	carried := "classic, the stream carrying its events"
	for _, spec := range []burstSpec{
		{side: carried, pair: "floor", order: 1, kind: classicFoo, ns: nsBurstCarried, carried: true},
		{side: "classic", pair: "floor", order: 2, kind: classicFoo, ns: nsBurstClassic4},
		{side: "classic", pair: "second floor", order: 1, kind: classicFoo, ns: nsBurstClassic5},
		{side: carried, pair: "second floor", order: 2, kind: classicFoo, ns: nsBurstCarried2, carried: true},
	} {
		carrying, err := streamWatches(ctx, carriedAPIVersion, "Foo")
		if err != nil {
			return err
		}
		switch {
		case spec.carried && !carrying:
			logf("the stream carrying the classic's events (floor.go)")
			err = carryClassic(ctx)
		case !spec.carried && carrying:
			logf("the stream as its members have it")
			err = uncarryClassic(ctx)
		}
		if err != nil {
			return err
		}
		if err := runBursts(ctx, r, streamWiring, spec); err != nil {
			return err
		}
	}
	logf("the stream as its members have it")
	return uncarryClassic(ctx)
}
