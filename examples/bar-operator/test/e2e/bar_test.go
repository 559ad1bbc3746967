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
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	examplev1alpha1 "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/apis/example/v1alpha1"
	"github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/reconciler/bar"
	"github.com/frugal-operator/foo-operator/test/clustertest"
)

func createBar(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	b := &examplev1alpha1.Bar{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: examplev1alpha1.BarSpec{Data: data}}
	if _, err := env.bars.ExampleV1alpha1().Bars(ns).Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// published waits until the ConfigMap of ns/name holds exactly data and the
// Bar is Ready, reporting it.
func published(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	eventually(t, "the Bar's data published", func(ctx context.Context) (bool, string) {
		cm, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if !maps.Equal(cm.Data, data) || len(cm.BinaryData) > 0 {
			return false, fmt.Sprintf("configmap holds %v", cm.Data)
		}
		b, err := env.bars.ExampleV1alpha1().Bars(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if !b.Status.IsReady() || b.Status.ConfigMapName != name || b.Status.ObservedGeneration != b.Generation {
			return false, fmt.Sprintf("status %+v", b.Status)
		}
		return true, ""
	})
}

func patchBar(t *testing.T, ns, name, patch string) {
	t.Helper()
	if _, err := env.bars.ExampleV1alpha1().Bars(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A Bar's lifecycle, each step woken by the real adapters' events.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cms := env.Kube.CoreV1().ConfigMaps(ns)

	createBar(t, ns, "settings", map[string]string{"color": "blue"})
	published(t, ns, "settings", map[string]string{"color": "blue"})

	patchBar(t, ns, "settings", `{"spec":{"data":{"color":"red","size":"L"}}}`)
	published(t, ns, "settings", map[string]string{"color": "red", "size": "L"})

	// Drift by hand: a key changed, one added.
	if _, err := cms.Patch(ctx, "settings", types.MergePatchType, []byte(`{"data":{"color":"green","debug":"1"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	published(t, ns, "settings", map[string]string{"color": "red", "size": "L"})

	// Deleted: recreated from the delete event.
	cm, err := cms.Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap recreated", func(ctx context.Context) (bool, string) {
		got, err := cms.Get(ctx, "settings", metav1.GetOptions{})
		return err == nil && got.UID != cm.UID, fmt.Sprint(err)
	})
	published(t, ns, "settings", map[string]string{"color": "red", "size": "L"})

	// The Bar deleted: garbage collection removes its ConfigMap.
	if err := env.bars.ExampleV1alpha1().Bars(ns).Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap collected", func(ctx context.Context) (bool, string) {
		_, err := cms.Get(ctx, "settings", metav1.GetOptions{})
		return apierrs.IsNotFound(err), fmt.Sprint(err)
	})
}

// A ConfigMap of the Bar's name that someone else owns is refused, and
// taken at the next resync once it is gone (no event reports that: the
// ConfigMap source sees only the ConfigMaps Bars control).
func TestNotOwned(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}, Data: map[string]string{"theirs": "yes"}}
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createBar(t, ns, "taken", map[string]string{"mine": "yes"})
	eventually(t, "the Bar refused the name", func(ctx context.Context) (bool, string) {
		b, err := env.bars.ExampleV1alpha1().Bars(ns).Get(ctx, "taken", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := b.Status.GetCondition(examplev1alpha1.BarConditionConfigMapReady)
		return c != nil && c.Reason == examplev1alpha1.ReasonConfigMapNotOwned, fmt.Sprintf("%+v", c)
	})
	got, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "taken", metav1.GetOptions{})
	if err != nil || !maps.Equal(got.Data, theirs.Data) {
		t.Fatalf("their ConfigMap = %v, %v; want it untouched", got, err)
	}
	resync(t) // refused again: the rule to patch the repeated Warning event is used
	if err := env.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, "taken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	resync(t)
	published(t, ns, "taken", map[string]string{"mine": "yes"})
}

// What happens while no reconciler runs reaches no reconciler: the adapters
// give up on it. The cold-start resync finds it by listing.
func TestColdStartResync(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	before := env.AdapterDrops()
	if err := env.StopReconciler(); err != nil {
		t.Fatal(err)
	}
	createBar(t, ns, "while-down", map[string]string{"k": "v"})
	// The adapter retries an event for about 3 s, then drops it.
	eventually(t, "the adapter dropped the Bar's event", func(context.Context) (bool, string) {
		return env.AdapterDrops() > before, "no drop in the adapters' logs"
	})
	if err := env.StartReconciler(ctx); err != nil {
		t.Fatal(err)
	}
	published(t, ns, "while-down", map[string]string{"k": "v"})
}

// Bars whose reconciles fail (a quota refuses their ConfigMaps) when the
// reconciler goes, as at zero, are run again requeue.Retry later, through
// the requeue schedule.
func TestAFailureOutlivesTheReconciler(t *testing.T) {
	ns := namespace(t)
	lift := clustertest.NoRoomFor(t, env.Kube, ns, corev1.ResourceConfigMaps, func(ctx context.Context) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
		_, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	env.FailuresOutliveTheReconciler(t, ns, []string{"one", "two"},
		func(name string) { createBar(t, ns, name, map[string]string{"k": name}) },
		lift,
		func(name string) { published(t, ns, name, map[string]string{"k": name}) })
}

// The reconciler runs with exactly config/'s roles: it was refused nothing,
// and used every rule it is granted (the tests above do all it does; this
// one runs last).
func TestZLeastPrivilege(t *testing.T) {
	env.CheckLeastPrivilege(t, "examples/bar-operator/config", bar.AgentName, bar.AgentName)
}
