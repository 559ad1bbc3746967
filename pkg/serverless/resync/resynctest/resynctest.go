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

// Package resynctest holds a resync to its reconciler: over every row of the
// reconciler's TableTest, the resync must find the owner whose reconcile
// writes anything, so that a predicate such as resync.Pairs.NeedsWork can
// never miss work that ReconcileKind would do.
package resynctest

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	rtesting "knative.dev/pkg/reconciler/testing"
)

// FindsEveryRowsWork runs resync over the objects of each row of rows (a
// resync over fakes seeded with them, returning the keys it finds) and
// fails t for every row whose reconcile writes (creates, updates, status
// updates, patches, deletes) while the resync does not name the row's key.
// isOwner tells the owners among a row's objects; a row whose key names no
// owner among them is left out, as a resync lists only what exists.
func FindsEveryRowsWork(t *testing.T, rows rtesting.TableTest, isOwner func(runtime.Object) bool,
	resync func(objects []runtime.Object) ([]types.NamespacedName, error)) {
	t.Helper()
	checked, writing := 0, 0
	for _, row := range rows {
		ns, name, err := cache.SplitMetaNamespaceKey(row.Key)
		if err != nil || !slices.ContainsFunc(row.Objects, func(o runtime.Object) bool {
			m, err := meta.Accessor(o)
			return err == nil && isOwner(o) && m.GetNamespace() == ns && m.GetName() == name
		}) {
			continue
		}
		keys, err := resync(row.Objects)
		if err != nil {
			t.Fatalf("%s: the resync: %v", row.Name, err)
		}
		checked++
		found := slices.Contains(keys, types.NamespacedName{Namespace: ns, Name: name})
		writes := len(row.WantCreates) + len(row.WantUpdates) + len(row.WantStatusUpdates) + len(row.WantPatches) +
			len(row.WantDeletes) + len(row.WantDeleteCollections)
		if writes > 0 {
			writing++
		}
		switch {
		case writes > 0 && !found:
			t.Errorf("%s: the reconcile writes %d objects, the resync does not find it needs work", row.Name, writes)
		case writes == 0 && found:
			t.Logf("%s: the resync reconciles it, which writes nothing", row.Name)
		}
	}
	t.Logf("%d rows checked, %d of them writing", checked, writing)
}
