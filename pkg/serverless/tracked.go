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

package serverless

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"knative.dev/pkg/client/injection/ducks/duck/v1/addressable"
	"knative.dev/pkg/injection/clients/dynamicclient"
	"knative.dev/pkg/tracker"

	"github.com/frugal-operator/foo-operator/pkg/serverless/uncached"
)

// withDucks returns ctx with the Addressable duck factory that
// addressable.Get(ctx) returns (to resolver.NewURIResolverFromTracker, say):
// one that reads through ctx's dynamic client at each call, where
// knative.dev/pkg's (addressable.WithDuck) would start an informer per
// resource. A change of an Addressable reaches the owners that track it by
// its events (Operator.Tracked).
func withDucks(ctx context.Context) context.Context {
	return context.WithValue(ctx, addressable.Key{}, uncached.Ducks{Client: dynamicclient.Get(ctx), Type: &duckv1.AddressableType{}})
}

// trackers are the Parts.Trackers of every call of Operator.New: the
// serving reconciler's and each dry run's, filled by the reconciles of
// every resync.
type trackers struct {
	mu  sync.Mutex
	all []tracker.Interface
}

func (ts *trackers) add(t tracker.Interface) {
	if t == nil {
		return
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.all = append(ts.all, t)
}

// observers returns the owners that any tracker has obj tracked for, once
// each.
func (ts *trackers) observers(obj *metav1.PartialObjectMetadata) []types.NamespacedName {
	ts.mu.Lock()
	all := ts.all
	ts.mu.Unlock()
	seen := map[types.NamespacedName]bool{}
	var keys []types.NamespacedName
	for _, t := range all {
		for _, k := range t.GetObservers(obj) {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}
