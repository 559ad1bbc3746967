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
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/kmeta"
	"knative.dev/pkg/logging"
	pkgreconciler "knative.dev/pkg/reconciler"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	fooreconciler "github.com/frugal-operator/foo-operator/pkg/client/injection/reconciler/samplecontroller/v1alpha1/foo"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
)

// Reconciler keeps a Foo's Deployment in line with the Foo.
type Reconciler struct {
	kubeclient kubernetes.Interface
	fooclient  versioned.Interface
}

var _ fooreconciler.Interface = (*Reconciler)(nil)

// ReconcileKind implements fooreconciler.Interface: it creates the Foo's
// Deployment or converges it on the Foo's spec, then copies its availability
// into the Foo's status.
func (r *Reconciler) ReconcileKind(ctx context.Context, foo *samplesv1alpha1.Foo) pkgreconciler.Event {
	if err := foo.Validate(ctx); err != nil {
		foo.Status.MarkSpecInvalid(err.Error())
		return controller.NewPermanentError(newSpecInvalid(err))
	}

	desired := resources.MakeDeployment(foo)
	var event pkgreconciler.Event
	d, created, err := r.getOrCreate(ctx, foo, desired)
	switch {
	case apierrs.HasStatusCause(err, corev1.NamespaceTerminatingCause), namespaceGone(err):
		// The Foo goes with its namespace: nothing to make, nothing to retry.
		// (A Foo whose namespace is already gone is left behind by a
		// namespace deletion that raced an API server restart; retrying
		// would keep every resync failing.)
		logging.FromContext(ctx).Debugw("Namespace is being deleted or gone", "deployment", desired.Name)
		return nil
	case err != nil:
		return err
	case created:
		logging.FromContext(ctx).Infow("Created deployment", "deployment", desired.Name)
		event = newDeploymentCreated(desired.Name)
	case !metav1.IsControlledBy(d, foo):
		// Nothing reports that a foreign Deployment is gone: the Foo is
		// tried again, later and later (see retryRefused).
		foo.Status.MarkDeploymentNotOwned(desired.Name)
		recordDeploymentNotOwned(ctx, foo, desired.Name)
		return controller.NewRequeueAfter(retryRefused(foo, time.Now()))
	default:
		if update, changed := converge(d, desired); changed {
			d, err = r.kubeclient.AppsV1().Deployments(foo.Namespace).Update(ctx, update, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("failed to update deployment %q: %w", desired.Name, err)
			}
			logging.FromContext(ctx).Infow("Updated deployment", "deployment", desired.Name)
			event = newDeploymentUpdated(desired.Name)
		}
	}

	foo.Status.PropagateDeploymentStatus(d)
	return event
}

// Bounds of the delay before a Foo refused its Deployment's name is tried
// again: as long as it has been refused, within these.
const (
	RefusedRetryMin = time.Minute
	RefusedRetryMax = time.Hour
)

// retryRefused returns when to try a Foo refused its Deployment's name
// again: after as long as it has been refused (a doubling backoff that needs
// no state but the condition's transition time), within RefusedRetryMin and
// RefusedRetryMax. The library runs it then even if the reconciler scaled
// to zero meanwhile (serverless's requeue schedule).
func retryRefused(foo *samplesv1alpha1.Foo, now time.Time) time.Duration {
	refused := time.Duration(0)
	if c := foo.Status.GetCondition(samplesv1alpha1.FooConditionDeploymentReady); c != nil && !c.LastTransitionTime.Inner.IsZero() {
		refused = now.Sub(c.LastTransitionTime.Inner.Time)
	}
	return min(max(refused, RefusedRetryMin), RefusedRetryMax)
}

// getOrCreate returns the Foo's Deployment, creating desired if there is
// none (created). A Foo never reconciled before almost never has one: its
// Deployment is created without reading first, and read only if the name is
// taken (AlreadyExists). Errors name the request that failed.
//
// Such a Foo may be the one its add event carried (package handoff), not
// one read: as an informer's cache would, it may lag behind the API server.
// Creating from it cannot overwrite anything, and the status write that
// follows is refused if the Foo changed; but what exists is converged only
// on the Foo as the API server has it now (see current).
func (r *Reconciler) getOrCreate(ctx context.Context, foo *samplesv1alpha1.Foo, desired *appsv1.Deployment) (*appsv1.Deployment, bool, error) {
	deployments := r.kubeclient.AppsV1().Deployments(foo.Namespace)
	if foo.Status.ObservedGeneration != 0 {
		d, err := deployments.Get(ctx, desired.Name, metav1.GetOptions{})
		if err == nil {
			return d, false, nil
		}
		if !apierrs.IsNotFound(err) {
			return nil, false, fmt.Errorf("failed to get deployment %q: %w", desired.Name, err)
		}
	}
	d, err := deployments.Create(ctx, desired, metav1.CreateOptions{})
	if apierrs.IsAlreadyExists(err) {
		if err := r.current(ctx, foo); err != nil {
			return nil, false, err
		}
		d, err = deployments.Get(ctx, desired.Name, metav1.GetOptions{})
		if err != nil {
			return nil, false, fmt.Errorf("failed to get deployment %q: %w", desired.Name, err)
		}
		return d, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("failed to create deployment %q: %w", desired.Name, err)
	}
	return d, true, nil
}

// current reads foo and returns a Conflict if the API server's is another
// version: the reconcile is then done again, from a read (a Conflict writes
// no Warning event).
func (r *Reconciler) current(ctx context.Context, foo *samplesv1alpha1.Foo) error {
	now, err := r.fooclient.SamplecontrollerV1alpha1().Foos(foo.Namespace).Get(ctx, foo.Name, metav1.GetOptions{})
	switch {
	case apierrs.IsNotFound(err):
		return apierrs.NewConflict(samplesv1alpha1.Resource("foos"), foo.Name, errors.New("it was deleted"))
	case err != nil:
		return fmt.Errorf("failed to get foo %q: %w", foo.Name, err)
	case now.ResourceVersion != foo.ResourceVersion:
		return apierrs.NewConflict(samplesv1alpha1.Resource("foos"), foo.Name,
			fmt.Errorf("resourceVersion %s was reconciled, %s is current", foo.ResourceVersion, now.ResourceVersion))
	}
	return nil
}

// namespaceGone tells whether err says that the namespace of an object
// being created does not exist.
func namespaceGone(err error) bool {
	var status apierrs.APIStatus
	if !apierrs.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces"
}

// converge returns a copy of existing with every field the builder owns set
// as desired, and whether anything had drifted. The operator owns the whole
// pod template, so the templates are compared exactly: anything added to it
// by hand (a sidecar, an env var, a volume, an annotation, ...), changed or
// removed is drift. The exact comparison does not see the API server's
// defaulting as drift because resources.MakeDeployment spells out every
// default the server would fill in the template. One annotation is the
// user's, not drift: the one `kubectl rollout restart` sets to ask for a
// rollout. Replicas are owned too; of the Deployment's labels only ours are,
// others' are kept.
func converge(existing, desired *appsv1.Deployment) (*appsv1.Deployment, bool) {
	changed := false
	update := existing.DeepCopy()
	if update.Spec.Replicas == nil || *update.Spec.Replicas != *desired.Spec.Replicas {
		update.Spec.Replicas = desired.Spec.Replicas
		changed = true
	}
	template := desired.Spec.Template
	if at, ok := existing.Spec.Template.Annotations[restartedAtAnnotation]; ok {
		template = *template.DeepCopy()
		template.Annotations = kmeta.UnionMaps(template.Annotations, map[string]string{restartedAtAnnotation: at})
	}
	if !equality.Semantic.DeepEqual(template, existing.Spec.Template) {
		update.Spec.Template = template
		changed = true
	}
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			if update.Labels == nil {
				update.Labels = make(map[string]string, len(desired.Labels))
			}
			update.Labels[k] = v
			changed = true
		}
	}
	return update, changed
}

// restartedAtAnnotation is how `kubectl rollout restart` asks a Deployment
// for a rollout, on its pod template.
const restartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

func newDeploymentCreated(name string) pkgreconciler.Event {
	return pkgreconciler.NewEvent(corev1.EventTypeNormal, "DeploymentCreated", "Created deployment %q", name)
}

func newDeploymentUpdated(name string) pkgreconciler.Event {
	return pkgreconciler.NewEvent(corev1.EventTypeNormal, "DeploymentUpdated", "Updated deployment %q", name)
}

// recordDeploymentNotOwned records the classic sample-controller's
// ErrResourceExists event: a requeue is not an event the generated
// reconciler records.
func recordDeploymentNotOwned(ctx context.Context, foo *samplesv1alpha1.Foo, name string) {
	controller.GetEventRecorder(ctx).Eventf(foo, corev1.EventTypeWarning, "ErrResourceExists",
		"Resource %q already exists and is not managed by Foo", name)
}

func newSpecInvalid(err error) pkgreconciler.Event {
	return pkgreconciler.NewEvent(corev1.EventTypeWarning, "InvalidSpec", "Invalid spec: %v", err)
}
