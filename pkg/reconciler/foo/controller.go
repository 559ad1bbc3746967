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

	corev1 "k8s.io/api/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/controller"
	"knative.dev/pkg/logging"

	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned/scheme"
	fooclient "github.com/frugal-operator/foo-operator/pkg/client/injection/client"
	fooreconciler "github.com/frugal-operator/foo-operator/pkg/client/injection/reconciler/samplecontroller/v1alpha1/foo"
	"github.com/frugal-operator/foo-operator/pkg/serverless/ownwrites"
	"github.com/frugal-operator/foo-operator/pkg/serverless/uncached"
)

// AgentName is the component that the Foo reconciler's Kubernetes events name.
const AgentName = "foo-reconciler"

// NewReconciler returns the generated Foo reconciler around a Reconciler,
// reading Foos and Deployments straight from the API server: it needs the
// injection clients in ctx and no informer. What an event carries is never
// read in their place (see the README's trust model): every reconcile starts
// from the API server's current state.
//
// Without leader election, controller.Impl promotes it with no enqueue
// function, so its Promote lists nothing: a cold-start resync is the
// caller's to do (see receiver.Options.ColdStartResync).
//
// The Deployments it writes are recorded in writes (nil: nowhere), so that
// the events reporting them can be recognised.
func NewReconciler(ctx context.Context, writes *ownwrites.Record) controller.Reconciler {
	kc := kubeclient.Get(ctx)
	fc := fooclient.Get(ctx)
	// Reads outlive ctx's cancellation: a draining process finishes its reconciles.
	readCtx := context.WithoutCancel(ctx)
	r := &Reconciler{
		kubeclient:       kc,
		deploymentLister: uncached.NewDeploymentLister(readCtx, kc),
		writes:           writes,
	}
	return fooreconciler.NewReconciler(ctx, logging.FromContext(ctx), fc,
		uncached.NewFooLister(readCtx, fc), eventRecorder(ctx, kc.CoreV1()), r)
}

// NewController returns a controller.Impl whose workqueue feeds the
// reconciler that NewReconciler returns. Nothing feeds the queue: the caller
// enqueues keys (from CloudEvents, in this project).
func NewController(ctx context.Context, rec controller.Reconciler) *controller.Impl {
	return controller.NewContext(ctx, rec, controller.ControllerOptions{
		WorkQueueName: "Foos",
		Logger:        logging.FromContext(ctx),
	})
}

// eventRecorder returns the recorder in ctx (tests put one there) or one that
// writes Kubernetes events through the API server until ctx is done.
func eventRecorder(ctx context.Context, events typedcorev1.EventsGetter) record.EventRecorder {
	if r := controller.GetEventRecorder(ctx); r != nil {
		return r
	}
	b := record.NewBroadcaster()
	w := b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.Events("")})
	go func() {
		<-ctx.Done()
		w.Stop()
		b.Shutdown()
	}()
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: AgentName})
}
