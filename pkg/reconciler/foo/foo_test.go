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

package foo

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgotesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"knative.dev/pkg/apis"
	fakekubeclient "knative.dev/pkg/client/injection/kube/client/fake"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/ptr"
	. "knative.dev/pkg/reconciler/testing" //nolint:revive,staticcheck // TableTest vocabulary

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	. "github.com/frugal-operator/foo-operator/pkg/reconciler/testing" //nolint:revive,staticcheck // object builders
)

const (
	ns      = "ns"
	fooName = "foo"
	depName = "nginx"
	key     = ns + "/" + fooName
)

func TestReconcile(t *testing.T) {
	reconcileRows().Test(t, MakeFactory(func(ctx context.Context) controller.Reconciler {
		return NewReconciler(ctx)
	}))
}

// reconcileRows are ReconcileKind's rows: TestReconcile runs them, and
// TestResyncFindsTheWorkOfEveryRow holds the resync to them.
func reconcileRows() TableTest {
	// base is a Foo asking for 2 replicas of Deployment "nginx".
	base := func(opts ...FooOption) FooOption {
		return func(f *samplesv1alpha1.Foo) {
			WithDeploymentName(depName)(f)
			WithReplicas(2)(f)
			for _, o := range opts {
				o(f)
			}
		}
	}
	owned := resources.MakeDeployment(NewFoo(fooName, ns, base()))
	available := Deployment(owned, WithDeploymentAvailable)
	// readyFoo is a Foo whose status already says what available's status means.
	readyFoo := NewFoo(fooName, ns, base(WithInitFooConditions, WithStatusOf(available), WithObservedGeneration))
	// served is available as the API server returns it: every field the
	// server defaults filled in. Its status means what available's does.
	served := Deployment(owned, AsServerReturns, WithDeploymentAvailable)
	sidecar := corev1.Container{Name: "sidecar", Image: "busybox:1.36", Command: []string{"sleep", "infinity"}}
	updated := Eventf(corev1.EventTypeNormal, "DeploymentUpdated", "Updated deployment %q", depName)

	return TableTest{{
		Name: "bad key",
		Key:  "too/many/parts",
	}, {
		Name: "foo not found",
		Key:  key,
	}, {
		Name:    "foo being deleted",
		Key:     key,
		Objects: []runtime.Object{NewFoo(fooName, ns, base(WithFooDeletionTimestamp)), owned},
	}, {
		Name:        "deployment missing: create it",
		Key:         key,
		Objects:     []runtime.Object{NewFoo(fooName, ns, base())},
		WantCreates: []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, WithStatusOf(owned), WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeNormal, "DeploymentCreated", "Created deployment %q", depName)},
	}, {
		Name:         "new Foo: its Deployment is created without reading first",
		Key:          key,
		Objects:      []runtime.Object{NewFoo(fooName, ns, base())},
		WithReactors: []clientgotesting.ReactionFunc{InduceFailure("get", "deployments")},
		WantCreates:  []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, WithStatusOf(owned), WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeNormal, "DeploymentCreated", "Created deployment %q", depName)},
	}, {
		Name:        "new Foo whose Deployment exists (status never written): AlreadyExists, read, converge",
		Key:         key,
		Objects:     []runtime.Object{NewFoo(fooName, ns, base()), Deployment(available, WithDeploymentReplicas(5))},
		WantCreates: []runtime.Object{owned},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: available,
		}},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: readyFoo,
		}},
		WantEvents: []string{Eventf(corev1.EventTypeNormal, "DeploymentUpdated", "Updated deployment %q", depName)},
	}, {
		Name:    "new Foo handed off by its add event: no reads at all",
		Key:     key,
		Objects: []runtime.Object{NewFoo(fooName, ns, base())},
		// The last reactor runs first: the handoff, then any other read fails.
		WithReactors: []clientgotesting.ReactionFunc{InduceFailure("get", "foos"), InduceFailure("get", "deployments"), handedOff(NewFoo(fooName, ns, base()))},
		WantCreates:  []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, WithStatusOf(owned), WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeNormal, "DeploymentCreated", "Created deployment %q", depName)},
	}, {
		// The Foo its event carried is current: what exists is converged on it.
		Name:         "handed-off Foo whose Deployment exists: AlreadyExists, the Foo read (unchanged), converge",
		Key:          key,
		WithReactors: []clientgotesting.ReactionFunc{handedOff(NewFoo(fooName, ns, base(WithResourceVersion("1"))))},
		Objects:      []runtime.Object{NewFoo(fooName, ns, base(WithResourceVersion("1"))), Deployment(available, WithDeploymentReplicas(5))},
		WantCreates:  []runtime.Object{owned},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: available,
		}},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithResourceVersion("1"), WithInitFooConditions, WithStatusOf(available), WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeNormal, "DeploymentUpdated", "Updated deployment %q", depName)},
	}, {
		// The Foo its event carried is behind: the Deployment, made from the
		// API server's newer Foo, is never rolled back to it. The Conflict
		// has the key reconciled again, from a read. (The status write that
		// the generated reconciler makes of the old Foo is refused by a real
		// API server, then made onto the current Foo with the old
		// generation; the fake client has no resourceVersions.)
		Name:         "handed-off Foo behind the API server's, its Deployment exists: the Foo read, Conflict, the Deployment left alone",
		Key:          key,
		WithReactors: []clientgotesting.ReactionFunc{handedOff(NewFoo(fooName, ns, base(WithResourceVersion("1"))))},
		Objects:      []runtime.Object{NewFoo(fooName, ns, base(WithResourceVersion("2"), WithGeneration(2), WithReplicas(5))), Deployment(available, WithDeploymentReplicas(5))},
		WantErr:      true,
		WantCreates:  []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithResourceVersion("1"), WithInitFooConditions, withNewGenerationUnknown, WithObservedGeneration)),
		}},
	}, {
		Name:         "handed-off Foo deleted since, a Deployment of its name exists: Conflict, nothing else",
		Key:          key,
		WithReactors: []clientgotesting.ReactionFunc{handedOff(NewFoo(fooName, ns, base()))},
		Objects:      []runtime.Object{Deployment(available, WithoutOwner)},
		WantErr:      true,
		WantCreates:  []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, withNewGenerationUnknown, WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeWarning, "UpdateFailed", "Failed to update status for %q: %s", fooName,
			`foos.samplecontroller.knative.io "foo" not found`)},
	}, {
		Name:        "reconciled Foo whose Deployment is gone: read, then recreate",
		Key:         key,
		Objects:     []runtime.Object{readyFoo},
		WantCreates: []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, WithStatusOf(owned), WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeNormal, "DeploymentCreated", "Created deployment %q", depName)},
	}, {
		// Its update (a label, an annotation) is reconciled although its
		// status reports its generation: DeploymentNotOwned is not settled.
		Name:        "Foo refused its Deployment's name, now free: create it, report the rollout",
		Key:         key,
		Objects:     []runtime.Object{NewFoo(fooName, ns, base(WithInitFooConditions, WithDeploymentNotOwned, WithObservedGeneration))},
		WantCreates: []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, WithStatusOf(owned), WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeNormal, "DeploymentCreated", "Created deployment %q", depName)},
	}, {
		Name:    "replicas default to 1",
		Key:     key,
		Objects: []runtime.Object{NewFoo(fooName, ns, WithDeploymentName(depName))},
		WantCreates: []runtime.Object{
			resources.MakeDeployment(NewFoo(fooName, ns, WithDeploymentName(depName), WithReplicas(1))),
		},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			// The status update carries the stored spec, not the defaulted one.
			Object: NewFoo(fooName, ns, WithDeploymentName(depName), WithInitFooConditions,
				WithStatusOf(resources.MakeDeployment(NewFoo(fooName, ns, WithDeploymentName(depName), WithReplicas(1)))),
				WithObservedGeneration),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeNormal, "DeploymentCreated", "Created deployment %q", depName)},
	}, {
		Name:         "deployment create fails",
		Key:          key,
		Objects:      []runtime.Object{NewFoo(fooName, ns, base())},
		WithReactors: []clientgotesting.ReactionFunc{InduceFailure("create", "deployments")},
		WantErr:      true,
		WantCreates:  []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, withNewGenerationUnknown, WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeWarning, "InternalError",
			"failed to create deployment %q: inducing failure for create deployments", depName)},
	}, {
		Name:    "namespace being deleted: nothing to do, no retry",
		Key:     key,
		Objects: []runtime.Object{NewFoo(fooName, ns, base())},
		WithReactors: []clientgotesting.ReactionFunc{func(a clientgotesting.Action) (bool, runtime.Object, error) {
			if !a.Matches("create", "deployments") {
				return false, nil, nil
			}
			err := apierrs.NewForbidden(appsv1.Resource("deployments"), depName, errors.New("namespace ns is being terminated"))
			err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
			return true, nil, err
		}},
		WantCreates: []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, withNewGenerationUnknown, WithObservedGeneration)),
		}},
	}, {
		// Seen after an API server restart: the namespace controller, its
		// discovery not yet showing Foos, finalized the namespace and left
		// them behind. A create there can never succeed.
		Name:    "namespace gone, the Foo left behind: nothing to do, no retry",
		Key:     key,
		Objects: []runtime.Object{NewFoo(fooName, ns, base())},
		WithReactors: []clientgotesting.ReactionFunc{func(a clientgotesting.Action) (bool, runtime.Object, error) {
			if !a.Matches("create", "deployments") {
				return false, nil, nil
			}
			return true, nil, apierrs.NewNotFound(corev1.Resource("namespaces"), ns)
		}},
		WantCreates: []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, withNewGenerationUnknown, WithObservedGeneration)),
		}},
	}, {
		Name:         "deployment read fails",
		Key:          key,
		Objects:      []runtime.Object{NewFoo(fooName, ns, base(WithGeneration(2), withObserved(1)))},
		WithReactors: []clientgotesting.ReactionFunc{InduceFailure("get", "deployments")},
		WantErr:      true,
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithGeneration(2), WithInitFooConditions, withNewGenerationUnknown, WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeWarning, "InternalError",
			"failed to get deployment %q: inducing failure for get deployments", depName)},
	}, {
		Name:    "up to date: no writes",
		Key:     key,
		Objects: []runtime.Object{readyFoo, available},
	}, {
		Name:    "replicas drifted: converge",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(available, WithDeploymentReplicas(5))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: Deployment(available, WithDeploymentReplicas(2)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeNormal, "DeploymentUpdated", "Updated deployment %q", depName)},
	}, {
		Name: "spec.replicas changed: converge and report the rollout",
		Key:  key,
		Objects: []runtime.Object{NewFoo(fooName, ns, base(WithReplicas(3), WithGeneration(2), WithInitFooConditions,
			WithStatusOf(available), withObserved(1))), available},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: Deployment(available, WithDeploymentReplicas(3)),
		}},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithReplicas(3), WithGeneration(2), WithInitFooConditions,
				WithStatusOf(Deployment(available, WithDeploymentReplicas(3))), WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeNormal, "DeploymentUpdated", "Updated deployment %q", depName)},
	}, {
		Name:    "template and labels drifted: converge",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(available, WithImage("httpd"), WithDeploymentLabels(map[string]string{"x": "y"}))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: Deployment(available, WithDeploymentLabels(map[string]string{"x": "y", "app": "nginx", resources.FooLabelKey: fooName})),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeNormal, "DeploymentUpdated", "Updated deployment %q", depName)},
	}, {
		Name:    "as the API server returns it: no writes",
		Key:     key,
		Objects: []runtime.Object{readyFoo, served},
	}, {
		Name:    "sidecar container added: removed",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithContainer(sidecar), AsServerReturns)},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name:    "container removed: restored",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithoutContainers)},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name:    "env var added: removed",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithEnv("DEBUG", "1"))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name:    "command added: removed",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithCommand("/bin/sh", "-c", "sleep infinity"))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name:    "args added: removed",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithArgs("-g", "daemon off;"))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name:    "volume added: removed",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithEmptyDirVolume("scratch"))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name:    "pod securityContext field added: removed",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithPodRunAsUser(1000))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name: "container securityContext added: removed",
		Key:  key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithContainerSecurityContext(&corev1.SecurityContext{
			Privileged: ptr.Bool(true),
		}))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name:    "kubectl rollout restart's annotation: kept, no writes",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithTemplateAnnotation("kubectl.kubernetes.io/restartedAt", "2026-11-30T06:00:00Z"))},
	}, {
		Name: "kubectl rollout restart's annotation kept while other drift is reverted",
		Key:  key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithImage("busybox"),
			WithTemplateAnnotation("kubectl.kubernetes.io/restartedAt", "2026-11-30T06:00:00Z"))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: Deployment(served, WithTemplateAnnotation("kubectl.kubernetes.io/restartedAt", "2026-11-30T06:00:00Z")),
		}},
		WantEvents: []string{updated},
	}, {
		Name:    "template annotation added: removed",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithTemplateAnnotation("example.com/debug", "true"))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name:    "template label added: removed",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithTemplateLabel("tier", "debug"))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name:    "image changed: restored",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithImage("httpd:2.4"))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name:    "server-defaulted field changed: restored",
		Key:     key,
		Objects: []runtime.Object{readyFoo, Deployment(served, WithTerminationGracePeriod(5))},
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: served,
		}},
		WantEvents: []string{updated},
	}, {
		Name:         "deployment update fails",
		Key:          key,
		Objects:      []runtime.Object{readyFoo, Deployment(available, WithDeploymentReplicas(5))},
		WithReactors: []clientgotesting.ReactionFunc{InduceFailure("update", "deployments")},
		WantErr:      true,
		WantUpdates: []clientgotesting.UpdateActionImpl{{
			Object: Deployment(available, WithDeploymentReplicas(2)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeWarning, "InternalError",
			"failed to update deployment %q: inducing failure for update deployments", depName)},
	}, {
		Name:        "deployment not owned: leave it, report, no retry",
		Key:         key,
		Objects:     []runtime.Object{NewFoo(fooName, ns, base()), Deployment(available, WithoutOwner, WithDeploymentReplicas(7))},
		WantErr:     true,
		WantCreates: []runtime.Object{owned}, // a new Foo creates first: AlreadyExists, then it reads
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, WithDeploymentNotOwned, WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeWarning, "ErrResourceExists",
			"Resource %q already exists and is not managed by Foo", depName)},
	}, {
		Name:    "deployment owned by another foo",
		Key:     key,
		Objects: []runtime.Object{NewFoo(fooName, ns, base(WithObservedGeneration)), resources.MakeDeployment(NewFoo("other", ns, base()))},
		WantErr: true,
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, WithDeploymentNotOwned, WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeWarning, "ErrResourceExists",
			"Resource %q already exists and is not managed by Foo", depName)},
	}, {
		Name:    "deployment rolling out: DeploymentReady unknown",
		Key:     key,
		Objects: []runtime.Object{NewFoo(fooName, ns, base(WithObservedGeneration)), Deployment(owned, WithDeploymentRollingOut(1))},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, WithStatusOf(Deployment(owned, WithDeploymentRollingOut(1))), WithObservedGeneration)),
		}},
	}, {
		Name:    "deployment available: ready",
		Key:     key,
		Objects: []runtime.Object{NewFoo(fooName, ns, base(WithObservedGeneration)), available},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: readyFoo,
		}},
	}, {
		Name:    "deployment failed: DeploymentReady false",
		Key:     key,
		Objects: []runtime.Object{NewFoo(fooName, ns, base(WithObservedGeneration)), Deployment(owned, WithDeploymentFailed)},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithInitFooConditions, WithStatusOf(Deployment(owned, WithDeploymentFailed)), WithObservedGeneration)),
		}},
	}, {
		Name:         "status update fails",
		Key:          key,
		Objects:      []runtime.Object{NewFoo(fooName, ns, base(WithObservedGeneration)), available},
		WithReactors: []clientgotesting.ReactionFunc{InduceFailure("update", "foos")},
		WantErr:      true,
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: readyFoo,
		}},
		WantEvents: []string{Eventf(corev1.EventTypeWarning, "UpdateFailed",
			"Failed to update status for %q: inducing failure for update foos", fooName)},
	}, {
		Name:    "invalid spec: report, no retry",
		Key:     key,
		Objects: []runtime.Object{NewFoo(fooName, ns, base(WithReplicas(-1)))},
		WantErr: true,
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: NewFoo(fooName, ns, base(WithReplicas(-1), WithInitFooConditions,
				WithSpecInvalid("invalid value: -1: spec.replicas\nmust be greater than or equal to 0"), WithObservedGeneration)),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeWarning, "InvalidSpec",
			"Invalid spec: invalid value: -1: spec.replicas\nmust be greater than or equal to 0")},
	}}
}

// handedOff answers the first GET of foo with foo, once, as the handoff
// transport answers the reconcile's first read of a Foo whose add event the
// receiver believed (see serverless.Operator.HandOff); later reads reach the
// (fake) API server.
func handedOff(foo *samplesv1alpha1.Foo) clientgotesting.ReactionFunc {
	taken := false
	return func(a clientgotesting.Action) (bool, runtime.Object, error) {
		get, ok := a.(clientgotesting.GetAction)
		if !ok || taken || a.GetVerb() != "get" || a.GetResource().Resource != "foos" || get.GetNamespace() != foo.Namespace || get.GetName() != foo.Name {
			return false, nil, nil
		}
		taken = true
		return true, foo.DeepCopy(), nil
	}
}

// withObserved sets status.observedGeneration: the Foo was reconciled at
// that generation.
func withObserved(g int64) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.Status.ObservedGeneration = g }
}

// withNewGenerationUnknown is the status the generated reconciler leaves when
// ReconcileKind failed before saying anything of a new generation.
func withNewGenerationUnknown(f *samplesv1alpha1.Foo) {
	f.GetConditionSet().Manage(f.GetStatus()).MarkUnknown(samplesv1alpha1.FooConditionReady, "NewObservedGenFailure", "unsuccessfully observed a new generation")
}

func TestReconcileKindPermanentErrors(t *testing.T) {
	tests := []struct {
		name    string
		foo     *samplesv1alpha1.Foo
		objects []runtime.Object
	}{{
		name: "invalid spec",
		foo:  NewFoo(fooName, ns, WithDeploymentName("Not_A_Name")),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, kc := fakekubeclient.With(context.Background(), tc.objects...)
			r := &Reconciler{kubeclient: kc}
			if err := r.ReconcileKind(ctx, tc.foo.DeepCopy()); !controller.IsPermanentError(err) {
				t.Errorf("ReconcileKind() = %v, want a permanent error", err)
			}
			if got := len(kc.Actions()); got != 1 && tc.objects != nil {
				t.Errorf("ReconcileKind() made %d requests, want only the read: %v", got, kc.Actions())
			}
		})
	}
}

// A Foo refused its Deployment's name asks to be tried again later (nothing
// reports that the foreign Deployment is gone), as long after as it has
// been refused, within bounds; the classic's Warning is recorded each time.
func TestARefusedFooIsTriedAgainLater(t *testing.T) {
	foo := NewFoo(fooName, ns, WithDeploymentName(depName), WithObservedGeneration)
	ctx, kc := fakekubeclient.With(context.Background(), Deployment(resources.MakeDeployment(foo), WithoutOwner))
	recorder := record.NewFakeRecorder(1)
	ctx = controller.WithEventRecorder(ctx, recorder)
	r := &Reconciler{kubeclient: kc}
	err := r.ReconcileKind(ctx, foo.DeepCopy())
	if ok, after := controller.IsRequeueKey(err); !ok || after != RefusedRetryMin {
		t.Errorf("ReconcileKind() = %v, want a requeue after %v", err, RefusedRetryMin)
	}
	if got := len(kc.Actions()); got != 1 {
		t.Errorf("ReconcileKind() made %d requests, want only the read: %v", got, kc.Actions())
	}
	if got, want := <-recorder.Events, `Warning ErrResourceExists Resource "`+depName+`" already exists and is not managed by Foo`; got != want {
		t.Errorf("event %q, want %q", got, want)
	}

	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		refused time.Duration // ago
		want    time.Duration
	}{{0, RefusedRetryMin}, {10 * time.Second, RefusedRetryMin}, {10 * time.Minute, 10 * time.Minute}, {5 * time.Hour, RefusedRetryMax}} {
		f := foo.DeepCopy()
		f.Status.MarkDeploymentNotOwned(depName)
		for i := range f.Status.Conditions {
			f.Status.Conditions[i].LastTransitionTime = apis.VolatileTime{Inner: metav1.NewTime(now.Add(-tc.refused))}
		}
		if got := retryRefused(f, now); got != tc.want {
			t.Errorf("refused %v ago: tried again after %v, want %v", tc.refused, got, tc.want)
		}
	}
}
