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

// Package resynctest holds a resync to its reconciler, and serves objects
// as an API server would, for tests of a resync.
package resynctest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"knative.dev/pkg/controller"
	rtesting "knative.dev/pkg/reconciler/testing"

	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync/internal/snapshot"
)

// APIServer returns the config of an API server, in memory, that holds
// objects (of scheme's kinds) and nothing else: it answers GETs and LISTs
// (by namespace and label selector, paged) from them, and refuses every
// write.
func APIServer(scheme *runtime.Scheme, objects ...runtime.Object) (*rest.Config, error) {
	s := snapshot.New()
	for gvk := range scheme.AllKnownTypes() {
		if gvk.Version != runtime.APIVersionInternal && !strings.HasSuffix(gvk.Kind, "List") {
			gvr, _ := meta.UnsafeGuessKindToResource(gvk)
			s.Kind(gvr, gvk, "")
		}
	}
	for _, o := range objects {
		gvr, err := resourceOf(scheme, o)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(o)
		if err != nil {
			return nil, err
		}
		if _, err := s.Add(gvr, raw); err != nil {
			return nil, err
		}
	}
	return &rest.Config{Host: "http://api-server.test", Transport: s.Over(nil, nil)}, nil
}

func resourceOf(scheme *runtime.Scheme, o runtime.Object) (schema.GroupVersionResource, error) {
	gvks, _, err := scheme.ObjectKinds(o)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvks[0])
	return gvr, nil
}

// FindsEveryRowsWork runs the resync of kinds over the objects of each row
// of rows (an APIServer of scheme holding them, and the reconciler that
// newReconciler returns), and fails t for every row whose reconcile writes
// (creates, updates, status updates, patches, deletes) while the resync
// does not name the row's key as needing work, and for every row whose
// reconcile neither writes nor fails while the resync names it (a resync
// that reconciles what needs nothing costs requests). A row whose key names no
// owner among its objects is left out, as a resync lists only what exists.
func FindsEveryRowsWork(t *testing.T, rows rtesting.TableTest, scheme *runtime.Scheme, kinds resync.Kinds,
	newReconciler func(context.Context) controller.Reconciler) {
	t.Helper()
	checked, writing := 0, 0
	for _, row := range rows {
		ns, name, err := cache.SplitMetaNamespaceKey(row.Key)
		if err != nil || !slices.ContainsFunc(row.Objects, func(o runtime.Object) bool {
			m, err := meta.Accessor(o)
			gvr, rerr := resourceOf(scheme, o)
			return err == nil && rerr == nil && gvr == kinds.Owner && m.GetNamespace() == ns && m.GetName() == name
		}) {
			continue
		}
		work, err := run(scheme, kinds, newReconciler, row.Objects)
		if err != nil {
			t.Fatalf("%s: the resync: %v", row.Name, err)
		}
		checked++
		found := slices.Contains(work, types.NamespacedName{Namespace: ns, Name: name})
		writes := len(row.WantCreates) + len(row.WantUpdates) + len(row.WantStatusUpdates) + len(row.WantPatches) +
			len(row.WantDeletes) + len(row.WantDeleteCollections)
		if writes > 0 {
			writing++
		}
		switch {
		case writes > 0 && !found:
			t.Errorf("%s: the reconcile writes %d objects, the resync does not find it needs work", row.Name, writes)
		case writes == 0 && found && !row.WantErr:
			t.Errorf("%s: the resync reconciles it, which writes nothing", row.Name)
		}
	}
	t.Logf("%d rows checked, %d of them writing", checked, writing)
}

func run(scheme *runtime.Scheme, kinds resync.Kinds, newReconciler func(context.Context) controller.Reconciler,
	objects []runtime.Object) ([]types.NamespacedName, error) {
	cfg, err := APIServer(scheme, objects...)
	if err != nil {
		return nil, err
	}
	r, err := resync.New(context.Background(), cfg, kinds, newReconciler)
	if err != nil {
		return nil, fmt.Errorf("resync.New: %w", err)
	}
	work, _, err := r.KeysNeedingWork(context.Background())
	return work, err
}
