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

package uncached

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Client is what a Lister needs of a typed client of one kind (a
// client-go FooInterface, DeploymentInterface, ...): T is the object's
// pointer type, L its list's.
type Client[T, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
}

// Lister reads objects of one kind from the API server on every call. It is
// a generated XNamespaceLister (Get and List), and a cluster-scoped kind's
// XLister; a namespaced kind's XLister is a Lister with one more method,
// named after the kind, returning In, which cmd/uncached-lister-gen writes.
type Lister[T, L runtime.Object] struct {
	ctx    context.Context
	client func(namespace string) Client[T, L]
	ns     string
}

// New returns a Lister of every namespace whose requests live as long as
// ctx, reading through client, a typed client's method (T and L given, C
// inferred):
//
//	uncached.New[*appsv1.Deployment, *appsv1.DeploymentList](ctx, kc.AppsV1().Deployments)
func New[T, L runtime.Object, C Client[T, L]](ctx context.Context, client func(namespace string) C) Lister[T, L] {
	return Lister[T, L]{ctx: ctx, client: func(ns string) Client[T, L] { return client(ns) }}
}

// In returns a Lister of one namespace.
func (l Lister[T, L]) In(namespace string) Lister[T, L] {
	l.ns = namespace
	return l
}

// Get reads one object of the lister's namespace.
func (l Lister[T, L]) Get(name string) (T, error) {
	return l.client(l.ns).Get(l.ctx, name, metav1.GetOptions{})
}

// List lists the objects of the lister's namespace (of all namespaces at the
// top level) that match the selector.
func (l Lister[T, L]) List(selector labels.Selector) ([]T, error) {
	opts := metav1.ListOptions{}
	if selector != nil && !selector.Empty() {
		opts.LabelSelector = selector.String()
	}
	list, err := l.client(l.ns).List(l.ctx, opts)
	if err != nil {
		return nil, err
	}
	var out []T
	err = meta.EachListItem(list, func(o runtime.Object) error {
		out = append(out, o.(T))
		return nil
	})
	return out, err
}
