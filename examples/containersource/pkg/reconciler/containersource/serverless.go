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

package containersource

// This file is the one added to Knative Eventing's ContainerSource
// reconciler (the other files of this package are eventing v0.50.0's,
// unchanged): it builds the same Reconciler, reading through listers that
// ask the API server instead of informers, for serverless.Main.

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/logging"

	"knative.dev/eventing/pkg/apis/feature"
	v1 "knative.dev/eventing/pkg/apis/sources/v1"
	eventingscheme "knative.dev/eventing/pkg/client/clientset/versioned/scheme"
	eventingclient "knative.dev/eventing/pkg/client/injection/client"
	v1containersource "knative.dev/eventing/pkg/client/injection/reconciler/sources/v1/containersource"

	"github.com/frugal-operator/foo-operator/pkg/serverless"
)

//go:generate go run github.com/frugal-operator/foo-operator/pkg/serverless/cmd/uncached-lister-gen -header ../../../../../hack/boilerplate.go.txt knative.dev/eventing/pkg/client/listers/sources/v1.ContainerSource knative.dev/eventing/pkg/client/listers/sources/v1.SinkBinding k8s.io/client-go/listers/apps/v1.Deployment k8s.io/client-go/listers/core/v1.ConfigMap

// AgentName is the component that the reconciler's requests and Kubernetes
// events name.
const AgentName = "containersource-reconciler"

// ownerLabel is the label resources.Labels puts on a ContainerSource's
// Deployment, holding the ContainerSource's name.
const ownerLabel = "sources.knative.dev/containerSource"

// Operator is the ContainerSource operator, for serverless.Main:
// ContainerSources, which own a Deployment labelled with their name and a
// SinkBinding with no such label (the resync's dry run reads it from the
// API server).
var Operator = serverless.Operator{
	Name:  AgentName,
	Owner: serverless.Kind{Resource: v1.SchemeGroupVersion.WithResource("containersources"), Kind: "ContainerSource"},
	Owned: []serverless.Owned{
		{Kind: serverless.Kind{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment"}, OwnerLabel: ownerLabel},
		{Kind: serverless.Kind{Resource: v1.SchemeGroupVersion.WithResource("sinkbindings"), Kind: "SinkBinding"}},
	},
	Scheme: eventingscheme.Scheme,
	New:    New,
}

// New returns the parts for serverless.Main: eventing's generated
// reconciler around its Reconciler, with config-features in each
// reconcile's context as NewController puts it.
func New(ctx context.Context, cmw configmap.Watcher) serverless.Parts {
	featureStore := feature.NewStore(logging.FromContext(ctx).Named("feature-config-store"))
	featureStore.WatchConfigs(cmw)
	kc, ec := kubeclient.Get(ctx), eventingclient.Get(ctx)
	sources := newContainerSourceLister(ctx, ec.SourcesV1().ContainerSources)
	r := &Reconciler{
		kubeClientSet:         kc,
		eventingClientSet:     ec,
		containerSourceLister: sources,
		sinkBindingLister:     newSinkBindingLister(ctx, ec.SourcesV1().SinkBindings),
		deploymentLister:      newDeploymentLister(ctx, kc.AppsV1().Deployments),
		// Listed with eventingtls.TrustBundleSelector, which the
		// informer's filter applied.
		trustBundleConfigMapLister: newConfigMapLister(ctx, kc.CoreV1().ConfigMaps),
	}
	return serverless.Parts{
		Reconciler: v1containersource.NewReconciler(ctx, logging.FromContext(ctx), ec, sources, controller.GetEventRecorder(ctx), r,
			controller.Options{ConfigStore: featureStore}),
	}
}
