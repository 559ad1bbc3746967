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

package testing

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ktesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	fakekubeclient "knative.dev/pkg/client/injection/kube/client/fake"
	"knative.dev/pkg/controller"
	logtesting "knative.dev/pkg/logging/testing"
	pkgreconciler "knative.dev/pkg/reconciler"
	. "knative.dev/pkg/reconciler/testing" //nolint:revive,staticcheck // the TableTest vocabulary, as in knative's own tests

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	fakefooclient "github.com/frugal-operator/foo-operator/pkg/client/injection/client/fake"
)

// Ctor makes the reconciler under test from a context holding fake clients.
type Ctor func(context.Context) controller.Reconciler

// MakeFactory returns a TableTest factory: it seeds the fake Foo client with
// the row's Foos and the fake kube client with everything else, builds the
// reconciler with ctor, promotes it (the generated reconciler skips every key
// until then) and installs the row's reactors on both clients.
func MakeFactory(ctor Ctor) Factory {
	return func(t *testing.T, r *TableRow) (controller.Reconciler, ActionRecorderList, EventList) {
		ctx := r.Ctx
		if ctx == nil {
			ctx = logtesting.TestContextWithLogger(t)
		}
		r.Ctx = ctx

		var foos, kube []runtime.Object
		for _, o := range r.Objects {
			if _, ok := o.(*samplesv1alpha1.Foo); ok {
				foos = append(foos, o)
			} else {
				kube = append(kube, o)
			}
		}
		ctx, kubeClient := fakekubeclient.With(ctx, kube...)
		ctx, fooClient := fakefooclient.With(ctx, foos...)
		eventRecorder := record.NewFakeRecorder(10)
		ctx = controller.WithEventRecorder(ctx, eventRecorder)

		c := ctor(ctx)
		if la, ok := c.(pkgreconciler.LeaderAware); ok {
			if err := la.Promote(pkgreconciler.UniversalBucket(), func(pkgreconciler.Bucket, types.NamespacedName) {}); err != nil {
				t.Fatal("Promote() =", err)
			}
		}
		for _, reactor := range r.WithReactors {
			kubeClient.PrependReactor("*", "*", reactor)
			fooClient.PrependReactor("*", "*", reactor)
		}
		return c, ActionRecorderList{fooClient, kubeClient}, EventList{Recorder: eventRecorder}
	}
}

// Reactor is the type of TableRow.WithReactors' elements, named here so that
// rows need not import client-go's testing package.
type Reactor = ktesting.ReactionFunc
