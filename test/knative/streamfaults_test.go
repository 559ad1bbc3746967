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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/frugal-operator/foo-operator/test/clustertest"
)

// aMembersFaultStaysWithIt breaks the Bar operator on the stream in three
// ways, in turn: its CRD deleted, the stream's rights to its kinds
// withdrawn, its reconciler failing every event. Meanwhile Foos converge
// within 10 s, through the same adapter; once the fault is mended, the Bars
// made during it converge within a minute.
func aMembersFaultStaysWithIt(t *testing.T) {
	ns := namespace(t)
	t.Run("its CRD deleted", func(t *testing.T) {
		if err := kubectl("delete", "crd", "bars.example.frugal-operator.dev", "--wait=false"); err != nil {
			t.Fatal(err)
		}
		fooConverges(t, ns, "during-crd-deletion")
		barLeftOut(t)
		fooConverges(t, ns, "without-bars-crd")
		mended := time.Now()
		if err := kubectl("apply", "-f", releaseBar); err != nil {
			t.Fatal(err)
		}
		clustertest.Eventually(t, time.Minute, "the Bar CRD is served again", func(ctx context.Context) (bool, string) {
			return createBar(ctx, ns, "after-crd") == nil, "creating a Bar"
		})
		barReadyWithin(t, ns, "after-crd", mended, time.Minute)
	})
	t.Run("the stream's rights to its kinds withdrawn", func(t *testing.T) {
		if err := kubectl("delete", "clusterrole", "bar-operator-stream"); err != nil {
			t.Fatal(err)
		}
		fooConverges(t, ns, "during-rights-withdrawal")
		barLeftOut(t)
		// A watch keeps the rights it began with: the fault shows when the
		// adapter starts again (an API server's restart, a namespace made).
		if err := kube.CoreV1().Pods(stream).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: adapterSelector}); err != nil {
			t.Fatal(err)
		}
		clustertest.Eventually(t, 2*time.Minute, "a new adapter runs", func(ctx context.Context) (bool, string) {
			return adaptersRolledOut(ctx, "")
		})
		fooConverges(t, ns, "without-bars-rights")
		if err := createBar(context.Background(), ns, "without-rights"); err != nil {
			t.Fatal(err)
		}
		mended := time.Now()
		if err := kubectl("apply", "-k", streamOverlay(t, fooMember, barMember)); err != nil {
			t.Fatal(err)
		}
		barReadyWithin(t, ns, "without-rights", mended, time.Minute)
	})
	t.Run("its reconciler failing every event", func(t *testing.T) {
		barKept(t)
		if err := kubectl("delete", "clusterrolebinding", "bar-reconciler"); err != nil {
			t.Fatal(err)
		}
		if err := createBar(context.Background(), ns, "while-failing"); err != nil {
			t.Fatal(err)
		}
		fooConverges(t, ns, "while-bar-fails")
		if ok, msg := barReady(context.Background(), ns, "while-failing"); ok {
			t.Fatal("the Bar converged while its reconciler had no rights:", msg)
		}
		mended := time.Now()
		if err := kubectl("apply", "-f", releaseBar); err != nil {
			t.Fatal(err)
		}
		barReadyWithin(t, ns, "while-failing", mended, time.Minute)
	})
}

// fooConverges makes a Foo in ns and checks that it converges within 10 s.
func fooConverges(t *testing.T, ns, name string) {
	t.Helper()
	made := time.Now()
	createFoo(t, newFoo(ns, name, name, 0))
	availableWithin(t, 2*time.Minute, ns, name, 0)
	took := time.Since(made).Round(time.Millisecond)
	if took > 10*time.Second {
		t.Errorf("Foo %s converged in %v, want within 10 s", name, took)
	}
	t.Logf("Foo %s converged in %v", name, took)
}

// barLeftOut waits until the stream's source watches nothing of the Bar
// operator's, its adapter rolled out, and the Bar operator's Trigger has the
// keeper's Warning Event saying why.
func barLeftOut(t *testing.T) {
	t.Helper()
	clustertest.Eventually(t, time.Minute, "the stream's source leaves the Bar operator out", func(ctx context.Context) (bool, string) {
		kinds, err := streamKinds(ctx)
		if err != nil {
			return false, err.Error()
		}
		if slices.Contains(kinds, "Bar") || slices.Contains(kinds, "ConfigMap") {
			return false, fmt.Sprintf("the source watches %v", kinds)
		}
		return adaptersRolledOut(ctx, "")
	})
	clustertest.Eventually(t, time.Minute, "a Warning Event on the Bar operator's Trigger", func(ctx context.Context) (bool, string) {
		events, err := kube.CoreV1().Events(stream).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=bar-reconciler,reason=LeftOutOfTheStream"})
		if err != nil {
			return false, err.Error()
		}
		return len(events.Items) > 0 && events.Items[0].Type == corev1.EventTypeWarning, fmt.Sprintf("%d Events", len(events.Items))
	})
}

// barKept waits until the stream's source watches the Bar operator's kinds,
// its adapter rolled out.
func barKept(t *testing.T) {
	t.Helper()
	clustertest.Eventually(t, time.Minute, "the stream's source watches Bars", func(ctx context.Context) (bool, string) {
		kinds, err := streamKinds(ctx)
		if err != nil {
			return false, err.Error()
		}
		if !slices.Contains(kinds, "Bar") {
			return false, fmt.Sprintf("the source watches %v", kinds)
		}
		return adaptersRolledOut(ctx, "")
	})
}

// streamKinds returns the kinds the stream's source watches.
func streamKinds(ctx context.Context) ([]string, error) {
	u, err := dyn.Resource(sourceGVR).Namespace(stream).Get(ctx, "operators", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	resources, _, _ := unstructured.NestedSlice(u.Object, "spec", "resources")
	var kinds []string
	for _, r := range resources {
		if r, ok := r.(map[string]any); ok {
			kinds = append(kinds, fmt.Sprint(r["kind"]))
		}
	}
	return kinds, nil
}

func createBar(ctx context.Context, ns, name string) error {
	bar := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.frugal-operator.dev/v1alpha1",
		"kind":       "Bar",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"data": map[string]any{"greeting": "hello"}},
	}}
	_, err := dyn.Resource(barGVR).Namespace(ns).Create(ctx, bar, metav1.CreateOptions{})
	return err
}

// barReady tells whether the Bar is Ready with its ConfigMap.
func barReady(ctx context.Context, ns, name string) (bool, string) {
	u, err := dyn.Resource(barGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	cm, _, _ := unstructured.NestedString(u.Object, "status", "configMapName")
	ok, msg := readyOf(u)
	return ok && observed == u.GetGeneration() && cm == name, fmt.Sprintf("%s, ConfigMap %q", msg, cm)
}

// barReadyWithin checks that the Bar is Ready within d of since.
func barReadyWithin(t *testing.T, ns, name string, since time.Time, d time.Duration) {
	t.Helper()
	clustertest.Eventually(t, 3*time.Minute, "Bar "+name+" Ready", func(ctx context.Context) (bool, string) {
		return barReady(ctx, ns, name)
	})
	took := time.Since(since).Round(time.Millisecond)
	if took > d {
		t.Errorf("Bar %s was Ready %v after the fault was mended, want within %v", name, took, d)
	}
	t.Logf("Bar %s was Ready %v after the fault was mended", name, took)
}
