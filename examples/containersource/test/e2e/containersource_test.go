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
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "knative.dev/eventing/pkg/apis/sources/v1"

	"github.com/frugal-operator/foo-operator/examples/containersource/pkg/reconciler/containersource"
	"github.com/frugal-operator/foo-operator/test/clustertest"
)

func createSource(t *testing.T, ns, name, image string) *v1.ContainerSource {
	t.Helper()
	s, err := env.sources.SourcesV1().ContainerSources(ns).Create(context.Background(), newSource(ns, name, image), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// converged tells whether ContainerSource ns/name has its Deployment
// running image and its SinkBinding binding that Deployment to sink, both
// controlled by it, and a status that reports its generation.
func converged(ctx context.Context, ns, name, image, sink string) (bool, string) {
	s, err := env.sources.SourcesV1().ContainerSources(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, name+"-deployment", metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	sb, err := env.sources.SourcesV1().SinkBindings(ns).Get(ctx, name+"-sinkbinding", metav1.GetOptions{})
	switch {
	case err != nil:
		return false, err.Error()
	case !metav1.IsControlledBy(d, s) || !metav1.IsControlledBy(sb, s):
		return false, "the Deployment or the SinkBinding is not controlled by the ContainerSource"
	case d.Spec.Template.Spec.Containers[0].Image != image:
		return false, "the Deployment runs " + d.Spec.Template.Spec.Containers[0].Image
	case sb.Spec.Sink.URI.String() != sink || sb.Spec.Subject.Name != d.Name:
		return false, fmt.Sprintf("the SinkBinding binds %s to %s", sb.Spec.Subject.Name, sb.Spec.Sink.URI)
	case s.Status.ObservedGeneration != s.Generation:
		return false, fmt.Sprintf("status reports generation %d of %d", s.Status.ObservedGeneration, s.Generation)
	}
	return true, ""
}

const sink = "http://sink.example.test"

// A new ContainerSource gets its Deployment and its SinkBinding.
func TestCreate(t *testing.T) {
	ns := namespace(t)
	createSource(t, ns, "new", "image-1")
	eventually(t, "the ContainerSource converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "new", "image-1", sink)
	})
}

// A deleted Deployment, then a deleted SinkBinding, are made again.
func TestOwnedObjectsDeletedAreRestored(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createSource(t, ns, "restored", "image-1")
	eventually(t, "the ContainerSource converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "restored", "image-1", sink)
	})
	for _, o := range []struct {
		what   string
		uid    func() (types.UID, error)
		delete func() error
	}{
		{"Deployment",
			func() (types.UID, error) {
				d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, "restored-deployment", metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				return d.UID, nil
			},
			func() error {
				return env.Kube.AppsV1().Deployments(ns).Delete(ctx, "restored-deployment", metav1.DeleteOptions{})
			}},
		{"SinkBinding",
			func() (types.UID, error) {
				sb, err := env.sources.SourcesV1().SinkBindings(ns).Get(ctx, "restored-sinkbinding", metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				return sb.UID, nil
			},
			func() error {
				return env.sources.SourcesV1().SinkBindings(ns).Delete(ctx, "restored-sinkbinding", metav1.DeleteOptions{})
			}},
	} {
		before, err := o.uid()
		if err != nil {
			t.Fatal(err)
		}
		if err := o.delete(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the "+o.what+" made again", func(ctx context.Context) (bool, string) {
			uid, err := o.uid()
			if err != nil || uid == before {
				return false, fmt.Sprintf("uid %s, %v", uid, err)
			}
			return converged(ctx, ns, "restored", "image-1", sink)
		})
	}
}

// A new image reaches the Deployment, a new sink the SinkBinding.
func TestSpecChanged(t *testing.T) {
	ns := namespace(t)
	createSource(t, ns, "changed", "image-1")
	eventually(t, "the ContainerSource converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "changed", "image-1", sink)
	})
	patch(t, ns, "changed", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"image-2"}]`)
	eventually(t, "the new image in the Deployment", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "changed", "image-2", sink)
	})
	patch(t, ns, "changed", `[{"op":"replace","path":"/spec/sink/uri","value":"http://other.example.test"}]`)
	eventually(t, "the new sink in the SinkBinding", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "changed", "image-2", "http://other.example.test")
	})
}

func patch(t *testing.T, ns, name, jsonPatch string) {
	t.Helper()
	if _, err := env.sources.SourcesV1().ContainerSources(ns).Patch(context.Background(), name, types.JSONPatchType,
		[]byte(jsonPatch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// A change that no event delivers (the adapter gave up on it while no
// reconciler ran, and the cold-start resync is off) is found by the ping's
// resync, and only it: the resync writes nothing about a converged
// ContainerSource.
func TestThePingConverges(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createSource(t, ns, "steady", "image-1")
	createSource(t, ns, "missed", "image-1")
	for _, name := range []string{"steady", "missed"} {
		eventually(t, name+" converged", func(ctx context.Context) (bool, string) { return converged(ctx, ns, name, "image-1", sink) })
	}

	before := env.AdapterDrops()
	if err := env.StopReconciler(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.StopReconciler()
		if err := env.StartReconciler(context.Background()); err != nil {
			t.Error("restarting the reconciler:", err)
		}
	})
	patch(t, ns, "missed", `[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"image-2"}]`)
	eventually(t, "the adapter dropped the change's event", func(context.Context) (bool, string) {
		return env.AdapterDrops() > before, "no drop in the adapters' logs"
	})
	if err := env.StartReconciler(ctx, "--cold-start-resync=false"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := converged(ctx, ns, "missed", "image-2", sink); ok {
		t.Fatal("converged before the ping: the test proves nothing")
	}

	_, from, err := env.CP.AuditEvents(0, reconcilerUser, containersource.AgentName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	// Answered once every ContainerSource that needed work was reconciled.
	if ok, msg := converged(ctx, ns, "missed", "image-2", sink); !ok {
		t.Errorf("not converged when the ping was answered: %s", msg)
	}
	events, _, err := env.CP.AuditEvents(from, reconcilerUser, containersource.AgentName)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.ObjectRef != nil && e.ObjectRef.Namespace == ns && e.Verb != "get" && e.Verb != "list" &&
			e.ObjectRef.Resource != "events" && !strings.HasPrefix(e.ObjectRef.Name, "missed") {
			t.Errorf("the resync wrote about a converged ContainerSource: %s %s", e.Verb, e.RequestURI)
		}
	}
}

// ContainerSources whose reconciles fail (a quota refuses their
// Deployments) when the reconciler goes, as at zero, are run again
// requeue.Retry later, through the requeue schedule.
func TestAFailureOutlivesTheReconciler(t *testing.T) {
	ns := namespace(t)
	lift := clustertest.NoRoomFor(t, env.Kube, ns, "count/deployments.apps", func(ctx context.Context) error {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}}}},
		}}
		_, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	env.FailuresOutliveTheReconciler(t, ns, []string{"one", "two"},
		func(name string) { createSource(t, ns, name, "image-1") },
		lift,
		func(name string) {
			eventually(t, name+" converged", func(ctx context.Context) (bool, string) { return converged(ctx, ns, name, "image-1", sink) })
		})
}

const reconcilerUser = "system:serviceaccount:" + operatorNamespace + ":" + containersource.AgentName

// The reconciler runs with exactly config/'s roles: it was refused nothing,
// and used every rule it is granted (the tests above do all it does; this
// one runs last).
func TestZLeastPrivilege(t *testing.T) {
	env.CheckLeastPrivilege(t, "examples/containersource/config", containersource.AgentName, containersource.AgentName)
}
