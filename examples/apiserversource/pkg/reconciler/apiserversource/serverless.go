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

package apiserversource

// This file is the one added to Knative Eventing's ApiServerSource
// reconciler (the other files of this package are eventing v0.50.0's,
// unchanged): it builds the same Reconciler, reading through listers that
// ask the API server instead of informers, and tracking its sinks through
// events, for serverless.Main.

import (
	"context"

	"github.com/kelseyhightower/envconfig"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/logging"
	"knative.dev/pkg/resolver"

	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	"knative.dev/eventing/pkg/apis/feature"
	v1 "knative.dev/eventing/pkg/apis/sources/v1"
	eventingscheme "knative.dev/eventing/pkg/client/clientset/versioned/scheme"
	eventingclient "knative.dev/eventing/pkg/client/injection/client"
	v1apiserversource "knative.dev/eventing/pkg/client/injection/reconciler/sources/v1/apiserversource"
	"knative.dev/eventing/pkg/eventingtls"
	reconcilersource "knative.dev/eventing/pkg/reconciler/source"

	"github.com/frugal-operator/foo-operator/pkg/serverless"
)

//go:generate go run github.com/frugal-operator/foo-operator/pkg/serverless/cmd/uncached-lister-gen -header ../../../../../hack/boilerplate.go.txt knative.dev/eventing/pkg/client/listers/sources/v1.ApiServerSource k8s.io/client-go/listers/core/v1.Namespace k8s.io/client-go/listers/core/v1.ServiceAccount k8s.io/client-go/listers/rbac/v1.Role k8s.io/client-go/listers/rbac/v1.RoleBinding k8s.io/client-go/listers/core/v1.ConfigMap

// AgentName is the component that the reconciler's requests and Kubernetes
// events name.
const AgentName = "apiserversource-reconciler"

// ownerLabel is the label resources.Labels puts on an ApiServerSource's
// Deployment, holding the ApiServerSource's name.
const ownerLabel = "eventing.knative.dev/sourceName"

// Operator is the ApiServerSource operator, for serverless.Main:
// ApiServerSources, which own their adapter's Deployment, labelled with
// their name, and send to a sink that they track: a Broker, whose address
// change reaches its sources by its events.
var Operator = serverless.Operator{
	Name:  AgentName,
	Owner: serverless.Kind{Resource: v1.SchemeGroupVersion.WithResource("apiserversources"), Kind: "ApiServerSource"},
	Owned: []serverless.Owned{
		{Kind: serverless.Kind{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment"}, OwnerLabel: ownerLabel},
	},
	Tracked: []serverless.Kind{
		{Resource: eventingv1.SchemeGroupVersion.WithResource("brokers"), Kind: "Broker"},
	},
	FollowConfig: true,
	// The trust bundles that the reconciler mounts in each adapter: eventing's
	// controller resyncs every source when one changes (controller.go).
	ResyncOn: []serverless.Selected{{Kind: serverless.Kind{Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap"},
		Selector: eventingtls.TrustBundleLabelSelector}},
	Scheme: eventingscheme.Scheme,
	New:    New,
}

// New returns the parts for serverless.Main: eventing's generated
// reconciler around its Reconciler, with config-features in each
// reconcile's context and config-logging and config-observability in the
// adapter's, as NewController does, and a tracker for its sinks.
func New(ctx context.Context, cmw configmap.Watcher) serverless.Parts {
	featureStore := feature.NewStore(logging.FromContext(ctx).Named("feature-config-store"))
	featureStore.WatchConfigs(cmw)
	env := &envConfig{}
	if err := envconfig.Process("", env); err != nil {
		logging.FromContext(ctx).Fatalw("Unable to process APIServerSource's required environment variables", "error", err)
	}
	kc, ec := kubeclient.Get(ctx), eventingclient.Get(ctx)
	sources := newApiServerSourceLister(ctx, ec.SourcesV1().ApiServerSources)
	t := serverless.NewTracker(ctx)
	r := &Reconciler{
		kubeClientSet:        kc,
		receiveAdapterImage:  env.Image,
		ceSource:             GetCfgHost(ctx),
		sinkResolver:         resolver.NewURIResolverFromTracker(ctx, t),
		configs:              reconcilersource.WatchConfigurations(ctx, component, cmw),
		namespaceLister:      newNamespaceLister(ctx, kc.CoreV1().Namespaces),
		serviceAccountLister: newServiceAccountLister(ctx, kc.CoreV1().ServiceAccounts),
		roleLister:           newRoleLister(ctx, kc.RbacV1().Roles),
		roleBindingLister:    newRoleBindingLister(ctx, kc.RbacV1().RoleBindings),
		// Listed with eventingtls.TrustBundleSelector, which the
		// informer's filter applied.
		trustBundleConfigMapLister: newConfigMapLister(ctx, kc.CoreV1().ConfigMaps),
	}
	return serverless.Parts{
		Reconciler: v1apiserversource.NewReconciler(ctx, logging.FromContext(ctx), ec, sources, controller.GetEventRecorder(ctx), r,
			controller.Options{ConfigStore: featureStore}),
		Tracker: t,
	}
}
