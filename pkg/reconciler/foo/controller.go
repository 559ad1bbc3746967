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

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/logging"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	fooscheme "github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned/scheme"
	fooclient "github.com/frugal-operator/foo-operator/pkg/client/injection/client"
	fooreconciler "github.com/frugal-operator/foo-operator/pkg/client/injection/reconciler/samplecontroller/v1alpha1/foo"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	"github.com/frugal-operator/foo-operator/pkg/serverless"
)

//go:generate go run github.com/frugal-operator/foo-operator/pkg/serverless/cmd/uncached-lister-gen -header ../../../hack/boilerplate.go.txt github.com/frugal-operator/foo-operator/pkg/client/listers/samplecontroller/v1alpha1.Foo

// AgentName is the component that the Foo reconciler's requests and
// Kubernetes events name.
const AgentName = "foo-reconciler"

// Operator is the Foo operator, for serverless.Main: Foos, which own
// Deployments labelled with their Foo's name.
var Operator = serverless.Operator{
	Name:   AgentName,
	Owner:  serverless.Kind{Resource: samplesv1alpha1.SchemeGroupVersion.WithResource("foos"), Kind: "Foo"},
	Owned:  []serverless.Owned{{Kind: deployments, OwnerLabel: resources.FooLabelKey}},
	Scheme: fooscheme.Scheme,
	// Safe: see NewReconciler.
	HandOff: true,
	New:     New,
}

var deployments = serverless.Kind{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment"}

// New returns the Foo operator's parts: the reconciler, and which Foos a
// Deployment's delete wakes.
func New(ctx context.Context, _ configmap.Watcher) serverless.Parts {
	return serverless.Parts{
		Reconciler: NewReconciler(ctx),
		OnDelete:   map[schema.GroupKind]serverless.OnDelete{deployments.GroupKind(): claimants{fooclient.Get(ctx)}.of},
		Settled:    settled,
	}
}

// settled are the reasons of a Foo's Ready that only the Deployment's
// rollout, or a new spec, changes: a refused name (DeploymentNotOwned) is
// not, a reconcile may take it.
var settled = []string{samplesv1alpha1.ReasonDeploymentRollingOut, samplesv1alpha1.ReasonDeploymentFailed, samplesv1alpha1.ReasonSpecInvalid}

// NewReconciler returns the generated Foo reconciler around a Reconciler,
// reading Foos and Deployments straight from the API server: it needs the
// injection clients and an event recorder in ctx, and no informer. It is
// safe with a Foo that lags behind the API server's, as what an event hands
// off may (see serverless.Operator.HandOff and docs/trust-model.md): a Foo
// never reconciled creates its Deployment first, and on AlreadyExists reads
// the Foo again and returns a Conflict if it changed.
func NewReconciler(ctx context.Context) controller.Reconciler {
	// The Foos are read from the API server (or from what was handed off).
	foos := newFooLister(ctx, fooclient.Get(ctx).SamplecontrollerV1alpha1().Foos)
	r := &Reconciler{kubeclient: kubeclient.Get(ctx), fooclient: fooclient.Get(ctx)}
	return fooreconciler.NewReconciler(ctx, logging.FromContext(ctx), fooclient.Get(ctx), foos, controller.GetEventRecorder(ctx), r)
}
