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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"knative.dev/pkg/apis"
	"knative.dev/pkg/apis/duck"
)

// Ducks is a knative.dev/pkg duck.InformerFactory (what addressable.Get(ctx)
// returns to resolver.NewURIResolverFromTracker, say) with no cache: its
// listers read the API server through Client at each call, and convert what
// they read to Type; its informers are never started, so the handlers added
// to them are never called (the events of serverless.Operator.Tracked stand
// in for theirs).
type Ducks struct {
	Client dynamic.Interface
	// Type is the duck type the objects are read as (&duckv1.AddressableType{}).
	Type apis.Listable
}

var _ duck.InformerFactory = Ducks{}

// Get implements duck.InformerFactory: the lister reads with ctx.
func (d Ducks) Get(ctx context.Context, gvr schema.GroupVersionResource) (cache.SharedIndexInformer, cache.GenericLister, error) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, d.Type, 0, cache.Indexers{})
	return inf, duckLister{ctx: ctx, d: d, resource: d.Client.Resource(gvr)}, nil
}

// duckLister is a cache.GenericLister that reads the API server.
type duckLister struct {
	ctx       context.Context
	d         Ducks
	resource  dynamic.NamespaceableResourceInterface
	namespace string
}

func (l duckLister) ByNamespace(namespace string) cache.GenericNamespaceLister {
	l.namespace = namespace
	return l
}

func (l duckLister) in() dynamic.ResourceInterface {
	if l.namespace == "" {
		return l.resource
	}
	return l.resource.Namespace(l.namespace)
}

func (l duckLister) Get(name string) (runtime.Object, error) {
	u, err := l.in().Get(l.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	obj := l.d.Type.DeepCopyObject()
	return obj, duck.FromUnstructured(u, obj)
}

func (l duckLister) List(selector labels.Selector) ([]runtime.Object, error) {
	ul, err := l.in().List(l.ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	list := l.d.Type.GetListType()
	if err := duck.FromUnstructured(ul, list); err != nil {
		return nil, err
	}
	return meta.ExtractList(list)
}
