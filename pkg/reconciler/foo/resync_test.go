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
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"knative.dev/pkg/controller"

	fooscheme "github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned/scheme"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync/resynctest"
	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
)

// The resync cannot miss work that a reconcile would do: over every row of
// ReconcileKind's table, the resync, listing the row's objects and running
// the reconciler over them, names the row's Foo whenever the reconcile
// writes anything.
func TestResyncFindsTheWorkOfEveryRow(t *testing.T) {
	resynctest.FindsEveryRowsWork(t, reconcileRows(), testScheme(t), Operator.ResyncKinds(), func(ctx context.Context) controller.Reconciler {
		return NewReconciler(ctx)
	})
}

func testScheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := fooscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Over converged Foos, the resync, set up and run, makes two requests: a
// LIST of Foos and one of their Deployments. (The generated reconciler
// lists every Foo when promoted with a function to enqueue them: the
// resync's dry-run reconciler is promoted without.)
// Every Settled reason is one that a row of ReconcileKind's table sets.
func TestSettledReasonsAreSet(t *testing.T) {
	if err := serverlesstest.CheckSettled(settled, reconcileRows()); err != nil {
		t.Error(err)
	}
}

func TestResyncOfConvergedFoosMakesTwoRequests(t *testing.T) {
	var objects []runtime.Object
	for _, name := range []string{"a", "b"} {
		f, d := converged(name, "dep-"+name)
		objects = append(objects, f, d)
	}
	cfg, err := resynctest.APIServer(testScheme(t), objects...)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []string
	)
	next := cfg.Transport
	cfg.Transport = roundTripper(func(req *http.Request) (*http.Response, error) {
		mu.Lock()
		seen = append(seen, req.Method+" "+req.URL.Path)
		mu.Unlock()
		return next.RoundTrip(req)
	})
	r, err := resync.New(context.Background(), cfg, Operator.ResyncKinds(), NewReconciler)
	if err != nil {
		t.Fatal(err)
	}
	work, refused, err := r.KeysNeedingWork(context.Background())
	if err != nil || len(work)+len(refused) != 0 {
		t.Fatalf("KeysNeedingWork() = %v, %v, %v; want nothing", work, refused, err)
	}
	want := []string{"GET /apis/samplecontroller.knative.io/v1alpha1/foos", "GET /apis/apps/v1/deployments"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Error("requests (-want, +got):", diff)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// The dry runs' cost, over 1000 converged Foos served from memory:
// go test -run XXX -bench Resync ./pkg/reconciler/foo
func BenchmarkResyncOfConvergedFoos(b *testing.B) {
	var objects []runtime.Object
	for i := range 1000 {
		f, d := converged(fmt.Sprintf("foo-%04d", i), fmt.Sprintf("dep-%04d", i))
		objects = append(objects, f, d)
	}
	cfg, err := resynctest.APIServer(testScheme(b), objects...)
	if err != nil {
		b.Fatal(err)
	}
	r, err := resync.New(context.Background(), cfg, Operator.ResyncKinds(), NewReconciler)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if w, _, err := r.KeysNeedingWork(context.Background()); err != nil || len(w) != 0 {
			b.Fatal(w, err)
		}
	}
}
