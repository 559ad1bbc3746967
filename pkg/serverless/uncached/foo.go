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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	foolisters "github.com/frugal-operator/foo-operator/pkg/client/listers/samplecontroller/v1alpha1"
)

// FooLister reads Foos from the API server on every call.
type FooLister struct {
	ctx    context.Context
	client versioned.Interface
	ns     string
}

var (
	_ foolisters.FooLister          = (*FooLister)(nil)
	_ foolisters.FooNamespaceLister = (*FooLister)(nil)
)

// NewFooLister returns a FooLister whose requests live as long as ctx.
func NewFooLister(ctx context.Context, client versioned.Interface) *FooLister {
	return &FooLister{ctx: ctx, client: client}
}

// List lists the Foos in the lister's namespace (all namespaces at the top
// level) that match the selector.
func (l *FooLister) List(selector labels.Selector) ([]*samplesv1alpha1.Foo, error) {
	list, err := l.client.SamplecontrollerV1alpha1().Foos(l.ns).List(l.ctx, listOptions(selector))
	if err != nil {
		return nil, err
	}
	out := make([]*samplesv1alpha1.Foo, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// Foos returns a lister for one namespace.
func (l *FooLister) Foos(namespace string) foolisters.FooNamespaceLister {
	return &FooLister{ctx: l.ctx, client: l.client, ns: namespace}
}

// Get reads one Foo of the lister's namespace.
func (l *FooLister) Get(name string) (*samplesv1alpha1.Foo, error) {
	return l.client.SamplecontrollerV1alpha1().Foos(l.ns).Get(l.ctx, name, metav1.GetOptions{})
}

func listOptions(selector labels.Selector) metav1.ListOptions {
	if selector == nil || selector.Empty() {
		return metav1.ListOptions{}
	}
	return metav1.ListOptions{LabelSelector: selector.String()}
}
