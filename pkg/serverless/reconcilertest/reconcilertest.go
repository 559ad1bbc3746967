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

// Package reconcilertest makes knative.dev/pkg's TableTest run a reconciler
// that reads through uncached listers: its reads go to the fake injection
// clients, so a row's objects seed those clients, not informers.
package reconcilertest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	ktesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"knative.dev/pkg/controller"
	logtesting "knative.dev/pkg/logging/testing"
	pkgreconciler "knative.dev/pkg/reconciler"
	rtesting "knative.dev/pkg/reconciler/testing"
)

// Fake is one of the reconciler's fake injection clients.
type Fake struct {
	// Holds tells which of a row's objects the client holds; nil: those that
	// no other Fake holds.
	Holds func(runtime.Object) bool
	// With returns ctx with the fake client, seeded with objects: a
	// generated fake package's With, as in
	//
	//	func(ctx context.Context, objects ...runtime.Object) (context.Context, ktesting.FakeClient) {
	//		return fakekubeclient.With(ctx, objects...)
	//	}
	With func(ctx context.Context, objects ...runtime.Object) (context.Context, ktesting.FakeClient)
}

// MakeFactory returns a TableTest factory: it seeds each fake client with
// the row's objects it holds, builds the reconciler with newReconciler
// (its context holds the clients, a logger and an event recorder), promotes
// it as serverless.Main does (the generated reconciler skips every key
// until then; a reconciler that cannot be promoted fails the test, as Main
// refuses it), and puts the row's reactors on
// every client.
func MakeFactory(newReconciler func(context.Context) controller.Reconciler, fakes ...Fake) rtesting.Factory {
	return func(t *testing.T, r *rtesting.TableRow) (controller.Reconciler, rtesting.ActionRecorderList, rtesting.EventList) {
		ctx := r.Ctx
		if ctx == nil {
			ctx = logtesting.TestContextWithLogger(t)
		}
		r.Ctx = ctx
		held := make([][]runtime.Object, len(fakes))
		for _, o := range r.Objects {
			i := holder(fakes, o)
			if i < 0 {
				t.Fatalf("no fake client holds %T", o)
			}
			held[i] = append(held[i], o)
		}
		var (
			clients []ktesting.FakeClient
			actions rtesting.ActionRecorderList
		)
		for i, f := range fakes {
			var c ktesting.FakeClient
			ctx, c = f.With(ctx, held[i]...)
			clients, actions = append(clients, c), append(actions, c)
		}
		recorder := record.NewFakeRecorder(10)
		ctx = controller.WithEventRecorder(ctx, recorder)
		rec := newReconciler(ctx)
		la, ok := rec.(pkgreconciler.LeaderAware)
		if !ok {
			t.Fatalf("%T does not implement reconciler.LeaderAware, so serverless.Main refuses it: a wrapper must forward Promote and Demote", rec)
		}
		if err := la.Promote(pkgreconciler.UniversalBucket(), nil); err != nil {
			t.Fatal("Promote() =", err)
		}
		for _, reactor := range r.WithReactors {
			for _, c := range clients {
				c.PrependReactor("*", "*", reactor)
			}
		}
		return rec, actions, rtesting.EventList{Recorder: recorder}
	}
}

// holder returns the index of the Fake that holds o, or -1.
func holder(fakes []Fake, o runtime.Object) int {
	rest := -1
	for i, f := range fakes {
		switch {
		case f.Holds == nil:
			rest = i
		case f.Holds(o):
			return i
		}
	}
	return rest
}
