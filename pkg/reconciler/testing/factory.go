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

	"k8s.io/apimachinery/pkg/runtime"
	ktesting "k8s.io/client-go/testing"
	fakekubeclient "knative.dev/pkg/client/injection/kube/client/fake"
	"knative.dev/pkg/controller"
	. "knative.dev/pkg/reconciler/testing" //nolint:revive,staticcheck // the TableTest vocabulary, as in knative's own tests

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	fakefooclient "github.com/frugal-operator/foo-operator/pkg/client/injection/client/fake"
	"github.com/frugal-operator/foo-operator/pkg/serverless/reconcilertest"
)

// Ctor makes the reconciler under test from a context holding fake clients.
type Ctor func(context.Context) controller.Reconciler

// MakeFactory returns a TableTest factory (reconcilertest.MakeFactory): the
// fake Foo client holds the row's Foos, the fake kube client everything
// else.
func MakeFactory(ctor Ctor) Factory {
	return reconcilertest.MakeFactory(ctor,
		reconcilertest.Fake{
			Holds: func(o runtime.Object) bool { _, ok := o.(*samplesv1alpha1.Foo); return ok },
			With: func(ctx context.Context, objects ...runtime.Object) (context.Context, ktesting.FakeClient) {
				return fakefooclient.With(ctx, objects...)
			},
		},
		reconcilertest.Fake{With: func(ctx context.Context, objects ...runtime.Object) (context.Context, ktesting.FakeClient) {
			return fakekubeclient.With(ctx, objects...)
		}},
	)
}

// Reactor is the type of TableRow.WithReactors' elements, named here so that
// rows need not import client-go's testing package.
type Reactor = ktesting.ReactionFunc
