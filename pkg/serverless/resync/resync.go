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

package resync

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/pager"
)

// Object is a Kubernetes object of a typed client: *appsv1.Deployment, ...
type Object interface {
	runtime.Object
	metav1.Object
}

// Pairs finds the owners (of type O) whose reconcile would change
// something, given the object each owns (of type D), if any.
type Pairs[O, D Object] struct {
	// Owners lists the owners of every namespace, a page at a time.
	Owners pager.ListPageFunc
	// Owned lists the owned objects of every namespace, a page at a time.
	Owned pager.ListPageFunc
	// OwnedSelector is the label selector of the owned objects that owners
	// may control (never every object of the kind in the cluster).
	OwnedSelector string
	// OwnedName returns the name of the object, in its own namespace, that
	// owner owns or asks for; "" when owner alone tells whether it needs
	// work (NeedsWork is then called at once, with no owned object).
	OwnedName func(owner O) string
	// NeedsWork tells whether reconciling owner would change anything, given
	// the owned object of OwnedName's name among those listed (nil if none).
	NeedsWork func(ctx context.Context, owner O, owned D) bool
}

// KeysNeedingWork lists every owner, then every owned object, a page of 500
// at a time, and returns the owners that NeedsWork says need work. It holds
// the owners waiting for their owned object (without their managed fields),
// and no owned object longer than its page. The keys it returns are to be
// reconciled from fresh reads, not from these lists.
func (p Pairs[O, D]) KeysNeedingWork(ctx context.Context) ([]types.NamespacedName, error) {
	var keys []types.NamespacedName
	need := func(o O) { keys = append(keys, types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}) }
	var none D
	// The owners to compare with their owned object, by its key.
	waiting := map[types.NamespacedName][]O{}
	err := pages(p.Owners).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		o := obj.DeepCopyObject().(O) // a copy, so that the page can go
		o.SetManagedFields(nil)
		name := p.OwnedName(o)
		if name == "" {
			if p.NeedsWork(ctx, o, none) {
				need(o)
			}
			return nil
		}
		k := types.NamespacedName{Namespace: o.GetNamespace(), Name: name}
		waiting[k] = append(waiting[k], o)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to list owners: %w", err)
	}
	err = pages(p.Owned).EachListItem(ctx, metav1.ListOptions{LabelSelector: p.OwnedSelector}, func(obj runtime.Object) error {
		d := obj.(D)
		k := types.NamespacedName{Namespace: d.GetNamespace(), Name: d.GetName()}
		for _, o := range waiting[k] {
			if p.NeedsWork(ctx, o, d) {
				need(o)
			}
		}
		delete(waiting, k)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failed to list owned objects: %w", err)
	}
	// Nothing listed has these names: missing, or foreign (unlabelled).
	for _, owners := range waiting {
		for _, o := range owners {
			if p.NeedsWork(ctx, o, none) {
				need(o)
			}
		}
	}
	return keys, nil
}

// pages returns a pager of 500 objects a page that fetches the next page
// while the current one is read, and no further: a resync holds two pages at
// most (client-go's default buffers ten).
func pages(list pager.ListPageFunc) *pager.ListPager {
	p := pager.New(list)
	p.PageBufferSize = 0
	return p
}
