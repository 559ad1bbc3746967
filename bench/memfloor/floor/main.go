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
// Command floor is the least a Foo operator on knative.dev/pkg's generated
// reconciler can be: the injection clients, an event recorder, the generated
// reconciler around a ReconcileKind that does nothing, and a controller.Impl
// running it. It serves nothing and reads nothing; memfloor measures it
// beside the reconciler. It prints "ready" once running and stops on SIGTERM.
package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/injection"
	"knative.dev/pkg/logging"
	pkgreconciler "knative.dev/pkg/reconciler"
	"knative.dev/pkg/signals"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	fooscheme "github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned/scheme"
	fooclient "github.com/frugal-operator/foo-operator/pkg/client/injection/client"
	fooreconciler "github.com/frugal-operator/foo-operator/pkg/client/injection/reconciler/samplecontroller/v1alpha1/foo"
	foolisters "github.com/frugal-operator/foo-operator/pkg/client/listers/samplecontroller/v1alpha1"
)

type nop struct{}

func (nop) ReconcileKind(context.Context, *samplesv1alpha1.Foo) pkgreconciler.Event { return nil }

func main() {
	cfg := injection.ParseAndGetRESTConfigOrDie()
	logger, _ := logging.NewLogger("", "info")
	ctx := logging.WithLogger(signals.NewContext(), logger)
	for _, inject := range injection.Default.GetClients() {
		ctx = inject(ctx, cfg)
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kubeclient.Get(ctx).CoreV1().Events("")})
	recorder := b.NewRecorder(fooscheme.Scheme, corev1.EventSource{Component: "floor"})
	lister := foolisters.NewFooLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	r := fooreconciler.NewReconciler(ctx, logger, fooclient.Get(ctx), lister, recorder, nop{})
	impl := controller.NewContext(ctx, r, controller.ControllerOptions{WorkQueueName: "Foo", Logger: logger})
	fmt.Println("ready")
	if err := impl.RunContext(ctx, 1); err != nil {
		logger.Fatal(err)
	}
}
