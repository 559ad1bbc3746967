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

	corev1 "k8s.io/api/core/v1"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/logging"

	examplev1alpha1 "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/apis/example/v1alpha1"
	barscheme "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/client/clientset/versioned/scheme"
	barclient "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/client/injection/client"
	barreconciler "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/client/injection/reconciler/example/v1alpha1/bar"
	"github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/reconciler/bar/resources"
	"github.com/frugal-operator/foo-operator/pkg/serverless"
)

//go:generate go run github.com/frugal-operator/foo-operator/pkg/serverless/cmd/uncached-lister-gen -header ../../../../../hack/boilerplate.go.txt github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/client/listers/example/v1alpha1.Bar

// AgentName is the component that the Bar reconciler's requests and
// Kubernetes events name.
const AgentName = "bar-reconciler"

// Operator is the Bar operator, for serverless.Main: Bars, which own
// ConfigMaps labelled with their Bar's name.
var Operator = serverless.Operator{
	Name:  AgentName,
	Owner: serverless.Kind{Resource: examplev1alpha1.SchemeGroupVersion.WithResource("bars"), Kind: "Bar"},
	Owned: []serverless.Owned{{Kind: serverless.Kind{Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap"},
		OwnerLabel: resources.BarLabelKey}},
	Scheme: barscheme.Scheme,
	New:    New,
}

// New returns the Bar operator's parts.
func New(ctx context.Context, _ configmap.Watcher) serverless.Parts {
	return serverless.Parts{
		Reconciler: NewReconciler(ctx),
		Settled:    settled,
	}
}

// settled are the reasons of a Bar's Ready that only a new spec changes: a
// refused name (ConfigMapNotOwned) is not, a reconcile may take it.
var settled = []string{examplev1alpha1.ReasonSpecInvalid}

// NewReconciler returns the generated Bar reconciler around a Reconciler,
// reading Bars and ConfigMaps from the API server.
func NewReconciler(ctx context.Context) controller.Reconciler {
	bc := barclient.Get(ctx)
	bars := newBarLister(ctx, bc.ExampleV1alpha1().Bars)
	r := &Reconciler{kubeclient: kubeclient.Get(ctx)}
	return barreconciler.NewReconciler(ctx, logging.FromContext(ctx), bc, bars, controller.GetEventRecorder(ctx), r)
}
