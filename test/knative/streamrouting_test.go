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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/frugal-operator/foo-operator/pkg/streamkeeper"
	"github.com/frugal-operator/foo-operator/pkg/streamrouter"
	"github.com/frugal-operator/foo-operator/test/clustertest"
)

// A member that owns Deployments, as the Foo operator does: a Knative
// Service of the dead-letter sink's image, which logs every event it is
// sent, whose Trigger declares the Deployments labelled recorderLabel.
const (
	recorder      = "recorder"
	recorderLabel = "test.frugal-operator.dev/recorder"
)

// eachMemberIsSentItsOwn: the recorder joins the stream beside the Foo and
// Bar operators. A burst of its Deployments reaches it, every one, and
// neither reaches nor wakes the Foo reconciler, at zero throughout; then a
// burst of Foos converges, and none of its events reaches or wakes the
// recorder, at zero throughout. Without the stream-router, the Foo
// operator's Trigger, which a Trigger's attributes let filter on the kind
// only, would be sent the recorder's Deployments.
func eachMemberIsSentItsOwn(t *testing.T) {
	const n = 50
	ctx := context.Background()
	recorderNS, foosNS := namespace(t), namespace(t)
	joinRecorder(t, recorderNS)

	// A burst of the recorder's Deployments.
	atZero(t, system, service)
	fooPods := watchPods(system, service)
	for i := range n {
		d := unrelatedDeployment(fmt.Sprintf("rec-%d", i))
		d.Labels[recorderLabel] = "true"
		if _, err := kube.AppsV1().Deployments(recorderNS).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var foreign []string
	clustertest.Eventually(t, 2*time.Minute, fmt.Sprintf("the recorder was sent its %d Deployments", n), func(ctx context.Context) (bool, string) {
		events, err := recorded(ctx, recorderNS)
		if err != nil {
			return false, err.Error()
		}
		mine := map[string]bool{}
		foreign = nil
		for _, e := range events {
			switch {
			case strings.Contains(e, "kind: Deployment") && strings.Contains(e, "namespace: "+recorderNS) && strings.Contains(e, "name: rec-"):
				mine[field(e, "name")] = true
			case strings.Contains(e, "kind: Pod"): // the stream's adapter, for all
			default:
				foreign = append(foreign, e)
			}
		}
		return len(mine) == n, fmt.Sprintf("%d of its Deployments, %d events of others'", len(mine), len(foreign))
	})
	if len(foreign) > 0 {
		t.Errorf("the recorder was sent %d events of what it does not declare, first:\n%s", len(foreign), foreign[0])
	}
	// The Foo reconciler's Trigger would have passed any of them: a wake-up
	// from zero would show as a pod. The broker's retries are over long
	// before the recorder has its last.
	woke := fooPods()
	if len(woke) > 0 {
		t.Errorf("the recorder's Deployments woke the Foo reconciler: pods %v", woke)
	}
	t.Logf("burst of %d of the recorder's Deployments: the recorder was sent each, %d events of others'; the Foo reconciler woke %d times", n, len(foreign), len(woke))

	// A burst of Foos.
	atZero(t, recorderNS, recorder)
	recorderPods := watchPods(recorderNS, recorder)
	for i := range n {
		createFoo(t, newFoo(foosNS, fmt.Sprintf("foo-%d", i), fmt.Sprintf("dep-%d", i), 0))
	}
	clustertest.Eventually(t, 3*time.Minute, fmt.Sprintf("%d Foos converged", n), func(ctx context.Context) (bool, string) {
		return converged(ctx, foosNS, n)
	})
	if woke = recorderPods(); len(woke) > 0 {
		t.Errorf("the Foos' events woke the recorder: pods %v", woke)
	}
	t.Logf("burst of %d Foos: converged; the recorder woke %d times", n, len(woke))
}

// joinRecorder runs the recorder in ns and makes it a member of the stream,
// as a member's Component does (its reader rights are the Foo operator's),
// and waits until the stream's adapter watches its Deployments. It leaves
// the stream when the test ends.
func joinRecorder(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	sink, err := dyn.Resource(ksvcGVR).Namespace(stream).Get(ctx, deadLetters, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(sink.Object, "spec", "template", "spec", "containers")
	image := containers[0].(map[string]any)["image"]
	ksvc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "serving.knative.dev/v1",
		"kind":       "Service",
		"metadata": map[string]any{"name": recorder, "namespace": ns,
			"labels": map[string]any{"networking.knative.dev/visibility": "cluster-local"}},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{
				"autoscaling.knative.dev/window":                             "10s",
				"autoscaling.knative.dev/scale-to-zero-pod-retention-period": "0s",
			}},
			"spec": map[string]any{"containers": []any{map[string]any{"image": image}}},
		}},
	}}
	if _, err := dyn.Resource(ksvcGVR).Namespace(ns).Create(ctx, ksvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	filter := streamrouter.Filter(recorder)
	trigger := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "eventing.knative.dev/v1",
		"kind":       "Trigger",
		"metadata": map[string]any{
			"name": recorder, "namespace": stream,
			"labels": map[string]any{streamkeeper.MemberLabel: "true"},
			"annotations": map[string]any{streamkeeper.ResourcesAnnotation: fmt.Sprintf(
				"- {apiVersion: apps/v1, kind: Deployment, selector: {matchExpressions: [{key: %s, operator: Exists}]}}", recorderLabel)},
		},
		"spec": map[string]any{
			"broker":     "operators",
			"filters":    []any{map[string]any{"cesql": filter.CESQL}},
			"subscriber": map[string]any{"ref": map[string]any{"apiVersion": "serving.knative.dev/v1", "kind": "Service", "name": recorder, "namespace": ns}},
		},
	}}
	if _, err := dyn.Resource(triggerGVR).Namespace(stream).Create(ctx, trigger, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dyn.Resource(triggerGVR).Namespace(stream).Delete(context.Background(), recorder, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
		clustertest.Eventually(t, time.Minute, "the stream's source no longer watches the recorder's", func(ctx context.Context) (bool, string) {
			watched, err := recorderWatched(ctx)
			if err != nil || watched {
				return false, fmt.Sprintf("watched %v, %v", watched, err)
			}
			return adaptersRolledOut(ctx, "")
		})
	})
	clustertest.Eventually(t, 3*time.Minute, "the recorder is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, ksvcGVR, ns, recorder)
	})
	clustertest.Eventually(t, 3*time.Minute, "Trigger recorder is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, triggerGVR, stream, recorder)
	})
	clustertest.Eventually(t, time.Minute, "the stream's source watches the recorder's Deployments", func(ctx context.Context) (bool, string) {
		watched, err := recorderWatched(ctx)
		if err != nil || !watched {
			return false, fmt.Sprintf("watched %v, %v", watched, err)
		}
		return adaptersRolledOut(ctx, "")
	})
}

// recorderWatched tells whether the stream's source watches the recorder's
// Deployments.
func recorderWatched(ctx context.Context) (bool, error) {
	u, err := dyn.Resource(sourceGVR).Namespace(stream).Get(ctx, "operators", metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	resources, _, _ := unstructured.NestedSlice(u.Object, "spec", "resources")
	return slices.ContainsFunc(resources, func(r any) bool { return strings.Contains(fmt.Sprint(r), recorderLabel) }), nil
}

// recorded returns the events the recorder's pods in ns logged, each as
// sdk-go prints it.
func recorded(ctx context.Context, ns string) ([]string, error) {
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=" + recorder})
	if err != nil {
		return nil, err
	}
	var events []string
	for _, p := range pods.Items {
		logs, err := kube.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: "user-container"}).DoRaw(ctx)
		if err != nil {
			continue
		}
		for _, e := range strings.Split(string(logs), "cloudevents.Event")[1:] {
			events = append(events, e)
		}
	}
	return events, nil
}

// field returns the value of an attribute or extension as sdk-go prints an
// event ("  name: value").
func field(event, name string) string {
	for _, l := range strings.Split(event, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+": "); ok {
			return v
		}
	}
	return ""
}
