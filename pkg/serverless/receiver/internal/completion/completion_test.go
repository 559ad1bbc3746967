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

package completion

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/controller"
	pkgreconciler "knative.dev/pkg/reconciler"
)

// fake answers each reconcile with the next error of its key's list (nil
// once the list is used up), after release is closed if it is set.
type fake struct {
	errs     map[string][]error
	release  chan struct{}
	started  chan string
	promoted bool
}

func (f *fake) Reconcile(_ context.Context, key string) error {
	if f.started != nil {
		f.started <- key
	}
	if f.release != nil {
		<-f.release
	}
	if errs := f.errs[key]; len(errs) > 0 {
		f.errs[key] = errs[1:]
		return errs[0]
	}
	return nil
}

func (f *fake) Promote(pkgreconciler.Bucket, func(pkgreconciler.Bucket, types.NamespacedName)) error {
	f.promoted = true
	return nil
}

func (f *fake) Demote(pkgreconciler.Bucket) {}

var key = types.NamespacedName{Namespace: "ns", Name: "a"}

// settled tells whether w is settled, and with what.
func settled(w *Awaiting) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := w.Wait(ctx)
	return !errors.Is(err, context.DeadlineExceeded), err
}

// A reconcile that was running when the Awaiting began does not settle it:
// the change the event reports may have come after that reconcile's read.
func TestOnlyAReconcileStartedAfterTheAwaitSettlesIt(t *testing.T) {
	f := &fake{release: make(chan struct{}), started: make(chan string, 2)}
	tr := New(f, 1)
	first := make(chan error)
	go func() { first <- tr.Reconcile(context.Background(), key.String()) }()
	<-f.started // running, not finished

	w := tr.Await([]types.NamespacedName{key, key}) // the same key twice counts once
	defer w.Stop()
	f.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if done, err := settled(w); done {
		t.Fatalf("settled by a reconcile that started before it (err %v)", err)
	}
	close(f.release)
	if err := tr.Reconcile(context.Background(), key.String()); err != nil {
		t.Fatal(err)
	}
	<-f.started
	if done, err := settled(w); !done || err != nil {
		t.Errorf("after a later reconcile: settled %v, err %v; want settled, nil", done, err)
	}
}

// An Awaiting sits through maxFailures-1 failed reconciles, and fails on the
// next; a permanent error is an answer, not a failure.
func TestFailuresAreToleratedUpToTheLimit(t *testing.T) {
	boom := errors.New("boom")
	for name, tc := range map[string]struct {
		errs     []error
		wantFail bool
	}{
		"two failures, then success":  {errs: []error{boom, boom}},
		"three failures":              {errs: []error{boom, boom, boom}, wantFail: true},
		"a permanent error":           {errs: []error{controller.NewPermanentError(boom)}},
		"a requeue after some time":   {errs: []error{controller.NewRequeueAfter(time.Hour)}},
		"a failure, then a permanent": {errs: []error{boom, controller.NewPermanentError(boom)}},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fake{errs: map[string][]error{key.String(): tc.errs}}
			tr := New(f, 3)
			w := tr.Await([]types.NamespacedName{key})
			defer w.Stop()
			for range len(tc.errs) + 1 {
				if done, _ := settled(w); done {
					break
				}
				_ = tr.Reconcile(context.Background(), key.String())
			}
			done, err := settled(w)
			if !done {
				t.Fatal("never settled")
			}
			if IsFailure(err) != tc.wantFail {
				t.Errorf("Wait() = %v, want a failure: %v", err, tc.wantFail)
			}
		})
	}
}

// A key that has failed maxFailures times in a row fails the next Awaiting
// at its first failure: its backoff has grown past any event's deadline.
func TestAKeyFailingAlreadyFailsAtOnce(t *testing.T) {
	boom := errors.New("boom")
	f := &fake{errs: map[string][]error{key.String(): {boom, boom, boom}}}
	tr := New(f, 2)
	for range 2 {
		_ = tr.Reconcile(context.Background(), key.String())
	}
	w := tr.Await([]types.NamespacedName{key})
	defer w.Stop()
	_ = tr.Reconcile(context.Background(), key.String())
	if done, err := settled(w); !done || !IsFailure(err) {
		t.Errorf("settled %v, err %v; want failed at the first failure", done, err)
	}
}

// Stop forgets what the Awaiting waited for.
func TestStopForgetsTheKeys(t *testing.T) {
	tr := New(&fake{}, 1)
	w := tr.Await([]types.NamespacedName{key})
	if got := tr.Waiting(key.String()); got != 1 {
		t.Fatalf("Waiting = %d, want 1", got)
	}
	w.Stop()
	if got := tr.Waiting(key.String()); got != 0 {
		t.Errorf("Waiting after Stop = %d, want 0", got)
	}
	if got := w.Pending(); got != 0 {
		t.Errorf("Pending after Stop = %d, want 0", got)
	}
}

// The generated reconciler skips every key until promoted: the Tracker must
// pass Promote on.
func TestPromoteIsForwarded(t *testing.T) {
	f := &fake{}
	if err := New(f, 1).Promote(pkgreconciler.UniversalBucket(), func(pkgreconciler.Bucket, types.NamespacedName) {}); err != nil {
		t.Fatal(err)
	}
	if !f.promoted {
		t.Error("the wrapped reconciler was not promoted")
	}
}
