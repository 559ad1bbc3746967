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
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/controller"
	pkgreconciler "knative.dev/pkg/reconciler"
	"knative.dev/pkg/tracker"

	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
)

// Operator is what an operator brings.
type Operator struct {
	// Name names the component: its logger, its API client's user agent,
	// its Kubernetes events' source and its workqueue.
	Name string
	// Owner is the kind that the reconciler reconciles: a namespaced kind.
	Owner Kind
	// Owned are the kinds that owners control, whose events wake their
	// owner. A resync (see package resync) lists the owners, and the owned
	// objects that carry an owner label, and runs the reconciler that New
	// returns over what it lists, with its writes refused: the owners whose
	// reconcile would write are reconciled.
	Owned []Owned
	// Tracked are the kinds of the objects that owners reference through
	// Parts.Tracker (a sink's Addressable, a ConfigMap): the operator's
	// sources send their events, each of which reconciles the owners that
	// track the object, as a knative.dev/pkg informer's handler calling the
	// tracker's OnChanged would. Each is named in the version that the
	// references name, and that the sources watch.
	Tracked []Kind
	// FollowConfig has the ConfigMaps that New's cmw watches followed by
	// events: the operator's sources watch the ConfigMaps labelled
	// ConfigLabel=Name (the operator's, in the system namespace, that
	// config/ labels so), and an event of one that cmw watches has it read
	// again and given to its observers, the dry runs' included, then runs a
	// resync, which reconciles the owners the new configuration changes, as
	// the global resync of a classic controller's config store would.
	// Without it, the ConfigMaps are read when a pod starts.
	FollowConfig bool
	// ResyncOn are the objects whose every change resyncs the owners, as a
	// classic controller's GlobalResync on their informer does: those the
	// reconciler lists by label rather than references by name, such as
	// the trust-bundle ConfigMaps (eventingtls.TrustBundleLabelSelector)
	// that Knative Eventing's sources mount in their adapters. The
	// operator's sources send their events; each is answered once the
	// resync has reconciled the owners the change affects.
	ResyncOn []Selected
	// Scheme knows the Owner's kind, for the Kubernetes events it records
	// (a generated clientset's scheme package).
	Scheme *runtime.Scheme
	// HandOff, if set, has the first read of an owner never reconciled, in the
	// reconcile that its add event asks for, answered with the object
	// that event carried instead of a GET, when the event may be believed
	// for it (see receiver.Decoder.Handoff and package handoff). Set it only
	// if the reconciler is safe with an owner that lags behind the API
	// server's: for an owner never reconciled, it may create what the owner
	// asks for, but reads the owner again before it changes anything that
	// exists (the Foo reconciler: AlreadyExists, then a GET and a Conflict
	// if the Foo changed).
	HandOff bool
	// New returns the operator's parts. ctx holds the logger, the injection
	// clients and the event recorder (controller.GetEventRecorder), and is
	// not cancelled on SIGTERM: the parts serve the drain. The ConfigMaps
	// that cmw is asked to watch, of the system namespace, are read once
	// before the first event is served, a default (WatchWithDefault)
	// standing in for a missing one (see package configwatch), and again
	// at each of their events with FollowConfig; without it, each new pod
	// reads them again. What the
	// injection clients write is recorded (see ownwrites), so that the
	// events reporting the reconciler's own writes are recognised, and what
	// events hand off is read through them (see HandOff): the reconciler
	// need not know of either. New is called a second time for the
	// resync's dry runs, with clients that answer from what the
	// resync listed and refuse writes: the reconciler must use the injection
	// clients of ctx only.
	New func(ctx context.Context, cmw configmap.Watcher) Parts
}

// ConfigLabel is the label whose value, on a ConfigMap of the system
// namespace, names the operator it configures (Operator.Name), for the
// sources of an operator that follows its configuration (FollowConfig).
const ConfigLabel = "serverless.frugal-operator.dev/configures"

// Parts are what Main runs.
type Parts struct {
	// Reconciler reconciles the Owner's keys: the generated reconciler,
	// reading through uncached listers.
	Reconciler controller.Reconciler
	// OnDelete, for an owned kind, names the other owners that an owned
	// object's delete wakes, beside its owner: see receiver.Owned.OnDelete.
	OnDelete map[schema.GroupKind]OnDelete
	// Settled are the reasons of an owner's Ready condition, when not True,
	// that no reconcile can change (see receiver.Decoder.Settled): updates
	// of an owner reconciled with such a reason are not reconciled again.
	Settled []string
	// Tracker, if the reconciler tracks references (Operator.Tracked), is
	// the tracker it tracks them in: make it with NewTracker. Each call of
	// New makes its own; the events of Tracked kinds reconcile the owners
	// that any of them tracks.
	Tracker tracker.Interface
}

// NewTracker returns a knative.dev/pkg tracker for Parts.Tracker, whose
// references last controller.GetTrackerLease(ctx) (three resync periods of
// knative.dev/pkg, 30 hours by default): every resync (the hourly ping's)
// tracks them again. It enqueues nothing itself: the events of the Tracked
// kinds ask it which owners track their object.
func NewTracker(ctx context.Context) tracker.Interface {
	return tracker.New(func(types.NamespacedName) {}, controller.GetTrackerLease(ctx))
}

// OnDelete names the owners, of namespace, that the delete of the object
// name, which owner controlled, wakes.
type OnDelete = func(ctx context.Context, namespace, name, owner string) ([]types.NamespacedName, error)

// Kind is a kind of object: the resource it is read and listed as, and its
// kind, as the events name it.
type Kind struct {
	Resource schema.GroupVersionResource
	Kind     string
}

// GroupKind returns k's group and kind.
func (k Kind) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: k.Resource.Group, Kind: k.Kind}
}

// String returns k as kubectl names it: the kind, a dot, the group.
func (k Kind) String() string { return k.GroupKind().String() }

// Owned is a kind of object that owners control: an object's event wakes
// the owner its controller ownerReference names.
type Owned struct {
	Kind
	// OwnerLabel, if set, is the label that holds, on each object of the
	// kind, the name of the owner (of its namespace) that owns it: a resync
	// lists the objects by it, and the reconciler's reads of them are
	// answered from that list. Without it, each reconcile of a resync reads
	// them from the API server.
	OwnerLabel string
}

// Selected is the objects of a kind that a label selector selects.
type Selected struct {
	Kind
	// Selector selects the objects by label, as kubectl's --selector does
	// (networking.knative.dev/trust-bundle=true); empty, it selects all.
	Selector string
}

// check tells what is wrong with op's kinds and parts: what Main refuses
// to start with.
func (op Operator) check(parts Parts) error {
	var errs []error
	seen := map[schema.GroupKind]bool{}
	for i, k := range slices.Concat([]Kind{op.Owner}, kindsOf(op.Owned), op.Tracked) {
		field := "Operator.Owner"
		switch {
		case i > len(op.Owned):
			field = fmt.Sprintf("Operator.Tracked[%d]", i-1-len(op.Owned))
		case i > 0:
			field = fmt.Sprintf("Operator.Owned[%d]", i-1)
		}
		switch {
		case k.Kind == "" || k.Resource.Resource == "" || k.Resource.Version == "":
			errs = append(errs, fmt.Errorf("%s needs a resource (with its version) and a kind, has %+v", field, k))
		case seen[k.GroupKind()]:
			errs = append(errs, fmt.Errorf("%s: %s is named twice", field, k))
		}
		seen[k.GroupKind()] = true
	}
	for i, r := range op.ResyncOn {
		if r.Kind.Kind == "" || r.Resource.Resource == "" || r.Resource.Version == "" {
			errs = append(errs, fmt.Errorf("Operator.ResyncOn[%d] needs a resource (with its version) and a kind, has %+v", i, r.Kind))
		}
		if _, err := labels.Parse(r.Selector); err != nil {
			errs = append(errs, fmt.Errorf("Operator.ResyncOn[%d]: selector %q: %w", i, r.Selector, err))
		}
	}
	for gk := range parts.OnDelete {
		if op.owned(gk) == nil {
			errs = append(errs, fmt.Errorf("Parts.OnDelete names %s, which Operator.Owned does not", gk))
		}
	}
	switch {
	case len(op.Tracked) > 0 && parts.Tracker == nil:
		errs = append(errs, errors.New("Operator.Tracked names kinds but Parts.Tracker is nil: nothing would tell which owners track an object"))
	case len(op.Tracked) == 0 && parts.Tracker != nil:
		errs = append(errs, errors.New("Parts.Tracker is set but Operator.Tracked names no kind: no change of a tracked object would reach its owners"))
	}
	if err := promotable(parts.Reconciler); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func kindsOf(owned []Owned) []Kind {
	kinds := make([]Kind, len(owned))
	for i, o := range owned {
		kinds[i] = o.Kind
	}
	return kinds
}

func (op Operator) owned(gk schema.GroupKind) *Owned {
	for i := range op.Owned {
		if op.Owned[i].GroupKind() == gk {
			return &op.Owned[i]
		}
	}
	return nil
}

// trackedKinds returns the groups and kinds of op.Tracked.
func (op Operator) trackedKinds() []schema.GroupKind {
	kinds := make([]schema.GroupKind, len(op.Tracked))
	for i, k := range op.Tracked {
		kinds[i] = k.GroupKind()
	}
	return kinds
}

// resyncOn returns the receiver's selections of op.ResyncOn, whose
// selectors check has parsed.
func (op Operator) resyncOn() []receiver.Selection {
	sels := make([]receiver.Selection, len(op.ResyncOn))
	for i, r := range op.ResyncOn {
		sel, _ := labels.Parse(r.Selector)
		sels[i] = receiver.Selection{Kind: r.GroupKind(), Selector: sel}
	}
	return sels
}

// ResyncKinds returns what a resync lists: the owners, and the owned kinds
// that carry an owner label (what resynctest checks, say).
func (op Operator) ResyncKinds() resync.Kinds {
	kinds := resync.Kinds{Owner: op.Owner.Resource}
	for _, o := range op.Owned {
		if o.OwnerLabel != "" {
			kinds.Owned = append(kinds.Owned, resync.Owned{Resource: o.Resource, OwnerLabel: o.OwnerLabel})
		}
	}
	return kinds
}

// receiverOwned returns the receiver's owned kinds: each read through
// client, its metadata only, and with the parts' OnDelete.
func (op Operator) receiverOwned(client metadata.Interface, parts Parts) []receiver.Owned {
	owned := make([]receiver.Owned, len(op.Owned))
	for i, o := range op.Owned {
		resource := client.Resource(o.Resource)
		owned[i] = receiver.Owned{Kind: o.GroupKind(), OnDelete: parts.OnDelete[o.GroupKind()],
			Get: func(ctx context.Context, namespace, name string) (metav1.Object, error) {
				return resource.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
			}}
	}
	return owned
}

// promotable refuses a reconciler that Main cannot promote: the generated
// reconciler skips every key until it is promoted, so a reconciler that
// hides its Promote (a wrapper that does not forward it) would answer every
// event 503 and log nothing at info.
func promotable(rec controller.Reconciler) error {
	if _, ok := rec.(pkgreconciler.LeaderAware); !ok {
		return fmt.Errorf("Parts.Reconciler (%T) does not implement knative.dev/pkg/reconciler.LeaderAware: "+
			"the generated reconciler reconciles no key until it is promoted, so a wrapper around it must forward Promote and Demote; "+
			"a reconciler that needs no promotion can embed reconciler.LeaderAwareFuncs", rec)
	}
	return nil
}
