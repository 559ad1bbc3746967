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
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"knative.dev/pkg/controller"

	fooscheme "github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned/scheme"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync/resynctest"
)

// The resync cannot miss work that a reconcile would do: over every row of
// ReconcileKind's table, the resync, listing the row's objects and running
// the reconciler over them, names the row's Foo whenever the reconcile
// writes anything.
func TestResyncFindsTheWorkOfEveryRow(t *testing.T) {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := fooscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	resynctest.FindsEveryRowsWork(t, reconcileRows(), s, Resync, func(ctx context.Context) controller.Reconciler {
		return NewReconciler(ctx)
	})
}
