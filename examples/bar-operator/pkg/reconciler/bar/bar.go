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

package bar

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/logging"
	pkgreconciler "knative.dev/pkg/reconciler"

	examplev1alpha1 "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/apis/example/v1alpha1"
	barreconciler "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/client/injection/reconciler/example/v1alpha1/bar"
	"github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/reconciler/bar/resources"
)

// Reconciler keeps a Bar's ConfigMap in line with the Bar.
type Reconciler struct {
	kubeclient kubernetes.Interface
}

var _ barreconciler.Interface = (*Reconciler)(nil)

// ReconcileKind implements barreconciler.Interface: it creates the Bar's
// ConfigMap or converges it on the Bar's data.
func (r *Reconciler) ReconcileKind(ctx context.Context, bar *examplev1alpha1.Bar) pkgreconciler.Event {
	if err := bar.Validate(ctx); err != nil {
		bar.Status.MarkSpecInvalid(err.Error())
		return controller.NewPermanentError(newSpecInvalid(err))
	}
	desired := resources.MakeConfigMap(bar)
	configMaps := r.kubeclient.CoreV1().ConfigMaps(bar.Namespace)
	var (
		event pkgreconciler.Event
		cm    *corev1.ConfigMap
		err   error
	)
	// A Bar never reconciled almost never has its ConfigMap yet: it is
	// created without reading first.
	if bar.Status.ObservedGeneration != 0 {
		cm, err = configMaps.Get(ctx, desired.Name, metav1.GetOptions{})
	}
	if bar.Status.ObservedGeneration == 0 || apierrs.IsNotFound(err) {
		cm, err = r.create(ctx, desired)
		event = newConfigMapCreated(desired.Name)
		if apierrs.IsAlreadyExists(err) {
			event = nil
			cm, err = configMaps.Get(ctx, desired.Name, metav1.GetOptions{})
		}
	}
	switch {
	case apierrs.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil // the Bar goes with its namespace
	case err != nil:
		return fmt.Errorf("failed to read or create configmap %q: %w", desired.Name, err)
	case !metav1.IsControlledBy(cm, bar):
		bar.Status.MarkConfigMapNotOwned(desired.Name)
		return controller.NewPermanentError(newConfigMapNotOwned(desired.Name))
	}
	if update, changed := converge(cm, desired); changed {
		if cm, err = configMaps.Update(ctx, update, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("failed to update configmap %q: %w", desired.Name, err)
		}
		logging.FromContext(ctx).Infow("Updated configmap", "configmap", desired.Name)
		event = newConfigMapUpdated(desired.Name)
	}
	bar.Status.MarkConfigMapReady(cm.Name)
	return event
}

// create creates desired.
func (r *Reconciler) create(ctx context.Context, desired *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	cm, err := r.kubeclient.CoreV1().ConfigMaps(desired.Namespace).Create(ctx, desired, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	logging.FromContext(ctx).Infow("Created configmap", "configmap", desired.Name)
	return cm, nil
}

// converge returns a copy of existing holding the Bar's data and label, and
// whether anything had drifted. The Bar owns all of the ConfigMap's data:
// keys added by hand are drift too, and so is binary data.
func converge(existing, desired *corev1.ConfigMap) (*corev1.ConfigMap, bool) {
	update := existing.DeepCopy()
	changed := !maps.Equal(existing.Data, desired.Data) || len(existing.BinaryData) > 0
	update.Data, update.BinaryData = desired.Data, nil
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			update.Labels = maps.Clone(existing.Labels)
			if update.Labels == nil {
				update.Labels = map[string]string{}
			}
			maps.Copy(update.Labels, desired.Labels)
			changed = true
			break
		}
	}
	return update, changed
}

func newConfigMapCreated(name string) pkgreconciler.Event {
	return pkgreconciler.NewEvent(corev1.EventTypeNormal, "ConfigMapCreated", "Created configmap %q", name)
}

func newConfigMapUpdated(name string) pkgreconciler.Event {
	return pkgreconciler.NewEvent(corev1.EventTypeNormal, "ConfigMapUpdated", "Updated configmap %q", name)
}

func newConfigMapNotOwned(name string) pkgreconciler.Event {
	return pkgreconciler.NewEvent(corev1.EventTypeWarning, "ErrResourceExists",
		"Resource %q already exists and is not managed by Bar", name)
}

func newSpecInvalid(err error) pkgreconciler.Event {
	return pkgreconciler.NewEvent(corev1.EventTypeWarning, "InvalidSpec", "Invalid spec: %v", err)
}
