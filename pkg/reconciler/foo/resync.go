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
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
)

// Lister finds the Foos that need a reconcile, by listing: the resync's
// question ("which Foos need work?") and a deleted Deployment's ("who was
// waiting for its name?"). It only reads.
type Lister struct {
	foos versioned.Interface
	kube kubernetes.Interface
}

// NewLister returns a Lister reading through the given clients.
func NewLister(foos versioned.Interface, kube kubernetes.Interface) *Lister {
	return &Lister{foos: foos, kube: kube}
}

// deploymentNameField is the Foo field that the CRD makes selectable
// (selectableFields in config/300-foo.yaml).
const deploymentNameField = "spec.deploymentName"

// KeysNeedingWork lists every Foo, then every Deployment that carries a
// Foo's label, a page of 500 at a time, and returns the Foos that a
// reconcile would change (see NeedsWork). At steady state that is none: a
// resync then costs two LISTs per 500 Foos and writes nothing.
func (l *Lister) KeysNeedingWork(ctx context.Context) ([]types.NamespacedName, error) {
	return resync.Pairs[*samplesv1alpha1.Foo, *appsv1.Deployment]{
		Owners: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return l.foos.SamplecontrollerV1alpha1().Foos(metav1.NamespaceAll).List(ctx, opts)
		},
		Owned: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return l.kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
		},
		OwnedSelector: resources.FooLabelKey,
		OwnedName: func(foo *samplesv1alpha1.Foo) string {
			if decided, _ := needsWorkWhateverTheDeployment(ctx, foo); decided {
				return ""
			}
			return foo.Spec.DeploymentName
		},
		NeedsWork: NeedsWork,
	}.KeysNeedingWork(ctx)
}

// Claimants returns the Foos of ns that ask for the Deployment name, now
// that the Deployment that holder (a Foo) controlled was deleted: those the
// name was refused to (DeploymentNotOwned) may take it now. If holder still
// asks for the name, it recreates the Deployment and nobody else may take
// it: then there are none. One LIST, by a field selector (of every Foo of
// ns if the CRD in the cluster predates that selectable field).
func (l *Lister) Claimants(ctx context.Context, ns, name, holder string) ([]types.NamespacedName, error) {
	foos := l.foos.SamplecontrollerV1alpha1().Foos(ns)
	list, err := foos.List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(deploymentNameField, name).String(),
	})
	if apierrs.IsBadRequest(err) {
		list, err = foos.List(ctx, metav1.ListOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list foos asking for deployment %s/%s: %w", ns, name, err)
	}
	var keys []types.NamespacedName
	for i := range list.Items {
		f := &list.Items[i]
		if f.Spec.DeploymentName != name || f.DeletionTimestamp != nil {
			continue
		}
		if f.Name == holder {
			return nil, nil
		}
		keys = append(keys, types.NamespacedName{Namespace: f.Namespace, Name: f.Name})
	}
	return keys, nil
}

// NeedsWork tells whether reconciling foo, whose Deployment is dep (nil when
// none carrying the Foo's label was found), would write anything: a
// generation not yet reconciled, a missing, foreign or drifted Deployment,
// or a status behind the Deployment's. A Foo refused its Deployment's name
// always needs work: only a reconcile finds out whether the name is free.
func NeedsWork(ctx context.Context, foo *samplesv1alpha1.Foo, dep *appsv1.Deployment) bool {
	if decided, needs := needsWorkWhateverTheDeployment(ctx, foo); decided {
		return needs
	}
	if dep == nil || !metav1.IsControlledBy(dep, foo) {
		return true
	}
	if _, drifted := converge(dep, resources.MakeDeployment(foo)); drifted {
		return true
	}
	status := foo.Status.DeepCopy()
	status.PropagateDeploymentStatus(dep)
	return !equality.Semantic.DeepEqual(status, &foo.Status)
}

// needsWorkWhateverTheDeployment answers NeedsWork when the Foo alone
// decides it (decided), and whether it needs work then.
func needsWorkWhateverTheDeployment(ctx context.Context, foo *samplesv1alpha1.Foo) (decided, needs bool) {
	switch {
	case foo.DeletionTimestamp != nil:
		return true, false // garbage collection's business
	case foo.Status.ObservedGeneration != foo.Generation:
		return true, true
	case foo.Validate(ctx) != nil:
		// Reported with this generation; only a new spec can change it.
		c := foo.Status.GetCondition(samplesv1alpha1.FooConditionDeploymentReady)
		return true, c == nil || c.Reason != samplesv1alpha1.ReasonSpecInvalid
	}
	return false, false
}
