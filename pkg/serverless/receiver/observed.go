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

package receiver

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/controller"
	pkgreconciler "knative.dev/pkg/reconciler"
)

// Later keeps the keys that a reconcile asked to be run again later.
type Later interface {
	Reconciled(key string, err error)
}

// observed wraps a controller.Reconciler to count each reconcile's outcome
// in the metrics and tell it to Later; with a Spread, it reconciles a key
// only inside Spread.Enter, and skips it outside (an event's wait takes
// that as moved). It forwards the LeaderAware methods: the generated
// reconciler skips every key until it is promoted.
type observed struct {
	inner   controller.Reconciler
	metrics *instruments
	later   Later  // nil: nobody
	spread  Spread // nil: every key is this process's
}

var (
	_ controller.Reconciler     = (*observed)(nil)
	_ pkgreconciler.LeaderAware = (*observed)(nil)
)

// Reconcile implements controller.Reconciler.
func (o *observed) Reconcile(ctx context.Context, key string) error {
	if o.spread != nil {
		leave, ok := o.spread.Enter(key)
		if !ok {
			return controller.NewSkipKey(key)
		}
		defer leave()
	}
	err := o.inner.Reconcile(ctx, key)
	o.metrics.reconcile(ctx, err)
	if o.later != nil {
		o.later.Reconciled(key, err)
	}
	return err
}

// Promote implements reconciler.LeaderAware by forwarding to the wrapped reconciler.
func (o *observed) Promote(b pkgreconciler.Bucket, enq func(pkgreconciler.Bucket, types.NamespacedName)) error {
	if la, ok := o.inner.(pkgreconciler.LeaderAware); ok {
		return la.Promote(b, enq)
	}
	return nil
}

// Demote implements reconciler.LeaderAware by forwarding to the wrapped reconciler.
func (o *observed) Demote(b pkgreconciler.Bucket) {
	if la, ok := o.inner.(pkgreconciler.LeaderAware); ok {
		la.Demote(b)
	}
}
