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
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"slices"
	"strings"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/eventing/pkg/apis/sources"
	"knative.dev/pkg/apis"

	"github.com/frugal-operator/foo-operator/pkg/serverless/handoff"
	"github.com/frugal-operator/foo-operator/pkg/serverless/ownwrites"
)

// PingEventType is PingSource's event type (sourcesv1.PingSourceEventType,
// which is not imported: its package links all of eventing's API): a resync.
const PingEventType = "dev.knative.sources.ping"

// verbs maps the types of ApiServerSource's events to what happened. In
// Resource mode an event's data is the whole object (its last state on
// delete); in Reference mode, a corev1.ObjectReference.
var verbs = map[string]struct {
	verb string
	ref  bool
}{
	sources.ApiServerSourceAddEventType:       {"add", false},
	sources.ApiServerSourceUpdateEventType:    {"update", false},
	sources.ApiServerSourceDeleteEventType:    {"delete", false},
	sources.ApiServerSourceAddRefEventType:    {"add", true},
	sources.ApiServerSourceUpdateRefEventType: {"update", true},
	sources.ApiServerSourceDeleteRefEventType: {"delete", true},
}

// Target is what an event asks of the reconciler.
type Target struct {
	// Keys are the owners to reconcile.
	Keys []types.NamespacedName
	// Resync asks for a resync: the keys the Server's KeyLister gives.
	Resync bool
	// Ignored says why the event maps to nothing, when it does.
	Ignored string
	// Created: the event is an owner's creation that the reconciler has not
	// seen (see Decoder.OwnWrites). Changed: an owner's update to a
	// generation that its status does not report reconciled (a new spec),
	// not the reconciler's own write. Many of either at once are a burst.
	Created, Changed bool
	// Lookup, if set, is a read the event still needs before its keys are
	// known or believed: Decoder.Resolve does it.
	Lookup *Lookup
	// Written, if set, is the version of an object that the event reports,
	// which this process did not write: with a Spread, the holder of the
	// Target's key may have, and is asked (see Server.serveKeys).
	Written *Written
}

// Written names an object at a resourceVersion, in the body of a request
// to KeysPath: the version an event reports.
type Written struct {
	Group           string `json:"group,omitempty"`
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion"`
	UID             string `json:"uid,omitempty"`
	// Add: the event reports the object's creation.
	Add bool `json:"add,omitempty"`
}

// IsOwnWrite tells whether the event that reports w tells nothing new to
// this process, as Decode would have found had it reached it: w is a
// version the reconciler wrote here (see OwnWrites, which forgets it), or
// the creation of an owner it wrote since.
func (d *Decoder) IsOwnWrite(w *Written) bool {
	gk := schema.GroupKind{Group: w.Group, Kind: w.Kind}
	switch {
	case w.Add && gk == d.Owner:
		return d.OwnWrites.Outdates(gk, w.Namespace, w.Name, types.UID(w.UID))
	case w.Add:
		return d.OwnWrites.IsOwnAdd(gk, w.Namespace, w.Name, w.ResourceVersion)
	}
	return d.OwnWrites.IsOwn(gk, w.Namespace, w.Name, w.ResourceVersion)
}

// written is the Written of an event's object of kind gk.
func written(gk schema.GroupKind, ns, name, rv string, uid types.UID, add bool) *Written {
	return &Written{Group: gk.Group, Kind: gk.Kind, Namespace: ns, Name: name, ResourceVersion: rv, UID: string(uid), Add: add}
}

// Lookup is what an event still needs before its keys are known: a read of
// an owned object (a Reference-mode event does not carry the object's owner,
// and an owned object's delete is believed only once the object is seen
// gone), the owners that track an object (see Decoder.Observers), or a
// ConfigMap to read again (see Decoder.Configs).
// Decoder.Resolve does it, after Decode, so that nothing waits while the
// event's body is held.
type Lookup struct {
	owned           *Owned
	namespace, name string
	// deleted: the event reports the delete of the object of this uid,
	// controlled by the owner of the Target's first key.
	deleted bool
	uid     types.UID
	// tracked is the object of a Tracked kind that the event reports.
	tracked *metav1.PartialObjectMetadata
	// config is the name of a ConfigMap of Configs' namespace that the
	// event reports.
	config string
}

// BadEventError is an event this package cannot use: a client error that
// delivering again cannot fix.
type BadEventError struct{ msg string }

func (e *BadEventError) Error() string { return e.msg }

func badEvent(format string, args ...any) error {
	return &BadEventError{msg: fmt.Sprintf(format, args...)}
}

// IsBadEvent tells whether err is a BadEventError.
func IsBadEvent(err error) bool {
	var b *BadEventError
	return errors.As(err, &b)
}

// Decoder maps CloudEvents to the keys of the owners they concern: an
// owner's event to that owner, an owned object's event to the owner that
// controls it, a ping or a source's new adapter (see AdapterLabel) to a resync.
type Decoder struct {
	// Owner is the group and kind of the reconciled resource.
	Owner schema.GroupKind
	// Owned are the kinds that owners control.
	Owned []Owned
	// OwnWrites, if set, holds the objects the reconciler wrote (recorded by
	// its clients' ownwrites.Record.Transport): an owned object's add or
	// update event (Resource mode) of exactly such a version, or its add
	// while the reconciler's create of that object is in flight, and an
	// owner's update of exactly such a version (its status write, typically,
	// whose reconcile read the owner it wrote), only report that write, and
	// are ignored; so is an owner's add (its creation) once the reconciler
	// has written that owner (same uid): a resync reconciled it first.
	OwnWrites *ownwrites.Record
	// SkipNoOp ignores owner events that ask for nothing: an update of a
	// converged object (see Settled; a reconciler's own status write,
	// typically), and a delete (garbage collection removes
	// what it owned). Resource mode only: Reference mode does not carry them.
	SkipNoOp bool
	// Settled are the reasons of an owner's Ready condition, when it is not
	// True, that no reconcile can change: only a change of something that
	// sends its own event (an owned object's rollout, a new spec). An owner
	// whose status reports its generation is converged when its Ready is
	// True or has such a reason; otherwise (a name refused while another
	// held it, say) a reconcile may yet change it: SkipNoOp reconciles its
	// updates, so that a label or an annotation forces a retry.
	Settled []string
	// Tracked are the kinds of the objects that owners reference, whose
	// changes reach them through Observers.
	Tracked []schema.GroupKind
	// Observers returns the owners that track obj, an object of a Tracked
	// kind: its apiVersion, kind, namespace, name and labels (a
	// knative.dev/pkg tracker's GetObservers). An event of such an object
	// reconciles them. What is tracked is learned by reconciling, the
	// resync's dry runs included, so it is asked only once a resync has
	// listed every owner (the cold start's, or a ping's): until then the
	// event waits.
	Observers func(obj *metav1.PartialObjectMetadata) []types.NamespacedName
	// ResyncOn are the objects whose every event asks for a resync, as a
	// classic controller's GlobalResync on their informer would: a
	// Resource-mode event's object when its labels match, any event of the
	// kind in Reference mode, which carries no labels.
	ResyncOn []Selection
	// Handoff, if set, keeps the object of an owner's add event for the
	// reconcile of its key, in place of a read, when the event may be
	// believed for it: its sender delivers in order (see Verifier), and
	// the owner was never reconciled (status.observedGeneration 0) and is
	// not being deleted. Any other event of that owner forgets it; with a
	// Spread, so does its key's being reconciled elsewhere or sent here by
	// another process (Server.settle, Server.serveKeys).
	Handoff *handoff.Store
	// Configs, if set, are the ConfigMaps that the operator's parts watch:
	// an event of one of them has it read again and
	// applied (Configs.Reload), then asks for a resync, whose dry runs find
	// the owners that the new configuration changes, as a classic
	// controller's global resync would.
	Configs Configs
	// Namespace, if set, is the only namespace whose owners are reconciled
	// (knative.dev/pkg's injection.WithNamespaceScope): an event that
	// concerns owners of other namespaces only is ignored.
	Namespace string

	waiting waiting
	lookups singleflight.Group
}

// Configs are the ConfigMaps that an operator's parts watch (a
// configmap.Watcher's), in one namespace.
type Configs interface {
	// Namespace is the ConfigMaps' namespace.
	Namespace() string
	// Watches tells whether the ConfigMap name is one of them.
	Watches(name string) bool
	// Reload reads the ConfigMap name again and gives it to its observers;
	// it tells whether name is watched.
	Reload(ctx context.Context, name string) (bool, error)
}

// Selection is the objects of a kind that a label selector selects.
type Selection struct {
	Kind     schema.GroupKind
	Selector labels.Selector
}

// resyncSelectors returns the selectors of ResyncOn's selections of kind
// gk.
func (d *Decoder) resyncSelectors(gk schema.GroupKind) []labels.Selector {
	var sels []labels.Selector
	for _, s := range d.ResyncOn {
		if s.Kind == gk {
			sels = append(sels, s.Selector)
		}
	}
	return sels
}

// configMapKind is the ConfigMaps' group and kind.
var configMapKind = schema.GroupKind{Kind: "ConfigMap"}

// config is the Target of an event of ConfigMap ns/name: a Lookup if it is
// one of Configs, else ok is false (it may be owned or tracked).
func (d *Decoder) config(gk schema.GroupKind, ns, name string) (t Target, ok bool) {
	if d.Configs == nil || gk != configMapKind || ns != d.Configs.Namespace() || !d.Configs.Watches(name) {
		return Target{}, false
	}
	return Target{Lookup: &Lookup{config: name}}, true
}

// Owned is a kind of object that owners control.
type Owned struct {
	// Kind is the group and kind of the objects.
	Kind schema.GroupKind
	// Get reads one: for Reference-mode events, which do not carry the
	// owner, and for a delete (Resource mode), which is believed only if the
	// object is gone: a delete of an object still there, or made again by
	// its owner since, is ignored, so that a forged or repeated delete costs
	// this one read. Without Get, every delete reconciles its owner.
	Get func(ctx context.Context, namespace, name string) (metav1.Object, error)
	// OnDelete, if set, is asked when an object that an owner controlled is
	// deleted (Resource mode): which other owners does that wake? (Foo's:
	// those refused the object's name while owner held it, so that one
	// converges as soon as the name is free.) They are reconciled too. It is
	// asked only once the object is seen gone (see Get), and when some
	// other owner of that namespace may wait (its Ready not True for a
	// reason not Settled, or refused by the last resync).
	OnDelete func(ctx context.Context, namespace, name, owner string) ([]types.NamespacedName, error)
}

func (d *Decoder) owned(gk schema.GroupKind) *Owned {
	for i := range d.Owned {
		if d.Owned[i].Kind == gk {
			return &d.Owned[i]
		}
	}
	return nil
}

// eventObject is what is read of a Resource-mode event's object: its keys,
// what SkipNoOp and OwnWrites look at, and whether it is an adapter's pod.
// Nothing else of it is decoded: a big object's managedFields, annotations
// and spec are skipped, not copied.
type eventObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name              string                  `json:"name"`
		Namespace         string                  `json:"namespace"`
		UID               types.UID               `json:"uid"`
		ResourceVersion   string                  `json:"resourceVersion"`
		Generation        int64                   `json:"generation"`
		DeletionTimestamp *metav1.Time            `json:"deletionTimestamp"`
		OwnerReferences   []metav1.OwnerReference `json:"ownerReferences"`
		// Labels holds the one label read: not a map per event.
		Labels struct {
			Adapter string `json:"eventing.knative.dev/source"`
		} `json:"labels"`
	} `json:"metadata"`
	Status struct {
		ObservedGeneration int64 `json:"observedGeneration"`
		Conditions         []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Reason string `json:"reason"`
		} `json:"conditions"`
	} `json:"status"`
}

// converged tells whether o's status reports its generation and a Ready
// condition that is True or that only others can change (see
// Decoder.Settled).
func (d *Decoder) converged(o *eventObject) bool {
	if o.Metadata.Generation == 0 || o.Status.ObservedGeneration != o.Metadata.Generation {
		return false
	}
	for _, c := range o.Status.Conditions {
		if c.Type == string(apis.ConditionReady) {
			return c.Status == string(corev1.ConditionTrue) || slices.Contains(d.Settled, c.Reason)
		}
	}
	return false
}

// learn records whether the owner o, of key, waits for a reconcile that
// could change its state (see waiting).
func (d *Decoder) learn(verb string, o *eventObject, key types.NamespacedName) {
	switch {
	case verb == "delete" || o.Metadata.DeletionTimestamp != nil:
		d.waiting.set(key, false)
	case o.Metadata.Generation != 0 && o.Status.ObservedGeneration == o.Metadata.Generation:
		d.waiting.set(key, !d.converged(o))
	}
	// A generation not yet reconciled: its reconcile's status write tells.
}

// Listed tells the decoder that keys are every owner that may need work, as
// a resync listed them.
func (d *Decoder) Listed(keys []types.NamespacedName) { d.waiting.listedAll(keys) }

// Sender is what the receiver knows of an event's sender.
type Sender struct {
	// InOrder: authenticated as a sender that delivers each object's events
	// in order, an ApiServerSource adapter (see Verifier).
	InOrder bool
}

// Decode returns what the event, from sender, asks for, reading nothing but
// the event: a Target with a Lookup needs Resolve. Errors are
// BadEventErrors: the event cannot be used.
func (d *Decoder) Decode(e *cloudevents.Event, sender Sender) (Target, error) {
	t := e.Type()
	v, ok := verbs[t]
	switch {
	case t == PingEventType:
		return Target{Resync: true}, nil
	case !ok:
		return Target{Ignored: fmt.Sprintf("event type %q is not handled", t)}, nil
	case v.ref:
		return d.decodeRef(e)
	default:
		return d.decodeResource(e, v.verb, sender)
	}
}

// AdapterLabel and AdapterLabelValue mark the pod of an ApiServerSource's
// adapter: Eventing labels each adapter's pods with them, and with
// eventing.knative.dev/sourceName=<the source's name>
// (knative.dev/eventing/pkg/reconciler/apiserversource/resources.Labels).
//
// An operator's sources may watch their own adapters' pods, selected by
// those labels: the event of one ready (its condition Ready True) asks for a
// resync. A new adapter sends nothing for what changed while none watched,
// or before its first list; its pod gets ready after a rollout (a new sink
// or resources, a namespace made or deleted: the namespaces are in the
// adapter's env), a pod deleted, and a container restarted. In fail-fast
// mode (the ApiServerSource's annotation
// features.knative.dev/apiserversource-skip-permissions-check: "true") the
// adapter also exits, and so restarts, where a resilient one would relist
// and send nothing for what changed meanwhile: a watch that cannot resume,
// as after an API server's restart. The source's own condition Deployed
// does not tell a container's restart: its pod is not ready for about a
// second, which the deployment controller need not see.
const (
	AdapterLabel      = "eventing.knative.dev/source" // as eventObject reads it
	AdapterLabelValue = "apiserver-source-controller"
)

// podKind is the Pods' group and kind.
var podKind = schema.GroupKind{Kind: "Pod"}

// adapterChanged is what an event of an adapter's pod asks for (see
// AdapterLabel).
func adapterChanged(verb string, o *eventObject) Target {
	if verb != "delete" && o.Metadata.DeletionTimestamp == nil {
		for _, c := range o.Status.Conditions {
			if c.Type == string(corev1.PodReady) && c.Status == string(corev1.ConditionTrue) {
				return Target{Resync: true}
			}
		}
	}
	return Target{Ignored: fmt.Sprintf("adapter pod %s/%s not ready, or going", o.Metadata.Namespace, o.Metadata.Name)}
}

// decodeResource reads the object a Resource-mode event carries. The owner
// of an owned object is read from the object itself, which works on delete
// too.
func (d *Decoder) decodeResource(e *cloudevents.Event, verb string, sender Sender) (Target, error) {
	var obj eventObject
	if err := unmarshalData(e, &obj); err != nil {
		return Target{}, err
	}
	gk, err := groupKind(obj.APIVersion, obj.Kind, e)
	if err != nil {
		return Target{}, err
	}
	meta := obj.Metadata
	if meta.Name == "" {
		return Target{}, badEvent("event data has no metadata.name")
	}
	if gk == d.Owner {
		t, err := d.ownerKey(meta.Namespace, meta.Name)
		if err != nil || len(t.Keys) == 0 {
			return t, err
		}
		if verb == "add" && d.OwnWrites.Outdates(gk, meta.Namespace, meta.Name, meta.UID) {
			d.Handoff.Forget(t.Keys[0])
			return Target{Ignored: fmt.Sprintf("%s/%s was written by the reconciler since it was created", meta.Namespace, meta.Name)}, nil
		}
		t.Created = verb == "add"
		d.handOff(verb, sender, &obj, e.Data(), t.Keys[0])
		d.learn(verb, &obj, t.Keys[0])
		if verb == "update" && d.OwnWrites.IsOwn(gk, meta.Namespace, meta.Name, meta.ResourceVersion) {
			return Target{Ignored: ownWrite(meta.Namespace, meta.Name, meta.ResourceVersion)}, nil
		}
		if d.SkipNoOp {
			if why := d.nothingToDo(verb, &obj); why != "" {
				return Target{Ignored: why}, nil
			}
		}
		t.Changed = verb == "update" && meta.DeletionTimestamp == nil && meta.Generation > obj.Status.ObservedGeneration
		if verb != "delete" {
			t.Written = written(gk, meta.Namespace, meta.Name, meta.ResourceVersion, meta.UID, verb == "add")
		}
		return t, nil
	}
	if gk == podKind && obj.Metadata.Labels.Adapter == AdapterLabelValue {
		return adapterChanged(verb, &obj), nil
	}
	if t, ok := d.config(gk, meta.Namespace, meta.Name); ok {
		return t, nil
	}
	if sels := d.resyncSelectors(gk); len(sels) > 0 {
		var o struct {
			Metadata struct {
				Labels labels.Set `json:"labels"`
			} `json:"metadata"`
		}
		if err := unmarshalData(e, &o); err != nil {
			return Target{}, err
		}
		if slices.ContainsFunc(sels, func(s labels.Selector) bool { return s.Matches(o.Metadata.Labels) }) {
			return Target{Resync: true}, nil
		}
	}
	if slices.Contains(d.Tracked, gk) {
		if err := validObject(gk.Kind, meta.Namespace, meta.Name); err != nil {
			return Target{}, err
		}
		tracked := &metav1.PartialObjectMetadata{}
		if err := unmarshalData(e, tracked); err != nil {
			return Target{}, err
		}
		if tracked.APIVersion == "" || tracked.Kind == "" { // as groupKind found them
			tracked.APIVersion, _ = e.Extensions()["apiversion"].(string)
			tracked.Kind, _ = e.Extensions()["kind"].(string)
		}
		return Target{Lookup: &Lookup{tracked: tracked}}, nil
	}
	owned := d.owned(gk)
	if owned == nil {
		return Target{Ignored: fmt.Sprintf("kind %s is not handled", gk)}, nil
	}
	if err := validObject(gk.Kind, meta.Namespace, meta.Name); err != nil {
		return Target{}, err
	}
	t, err := d.controllerKey(meta.Namespace, meta.Name, metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: meta.OwnerReferences}))
	if err != nil || len(t.Keys) == 0 {
		return t, err
	}
	own := d.OwnWrites.IsOwn
	if verb == "add" {
		own = d.OwnWrites.IsOwnAdd // the create's answer may not be in yet
	}
	if verb != "delete" && own(gk, meta.Namespace, meta.Name, meta.ResourceVersion) {
		return Target{Ignored: ownWrite(meta.Namespace, meta.Name, meta.ResourceVersion)}, nil
	}
	if verb != "delete" {
		t.Written = written(gk, meta.Namespace, meta.Name, meta.ResourceVersion, meta.UID, verb == "add")
	}
	if verb != "delete" || owned.Get == nil && owned.OnDelete == nil {
		return t, nil
	}
	t.Lookup = &Lookup{owned: owned, namespace: meta.Namespace, name: meta.Name, deleted: true, uid: meta.UID}
	return t, nil
}

// ownWrite says why an event of the reconciler's own write is ignored.
func ownWrite(ns, name, rv string) string {
	return fmt.Sprintf("resourceVersion %s of %s/%s is the reconciler's own write", rv, ns, name)
}

// handOff keeps the object (data) of an owner's event for the reconcile of
// key if it may be believed for it (see Decoder.Handoff), else forgets what
// was kept: the event tells of a change the kept object may not show.
func (d *Decoder) handOff(verb string, sender Sender, o *eventObject, data []byte, key types.NamespacedName) {
	if verb == "add" && sender.InOrder && o.Status.ObservedGeneration == 0 && o.Metadata.DeletionTimestamp == nil {
		d.Handoff.Put(key, data)
		return
	}
	d.Handoff.Forget(key)
}

// nothingToDo says why an owner event asks for no reconcile, or "".
func (d *Decoder) nothingToDo(verb string, o *eventObject) string {
	switch verb {
	case "delete":
		return "a deleted " + d.Owner.Kind + " has nothing to reconcile; garbage collection removes what it owned"
	case "update":
		if o.Metadata.DeletionTimestamp == nil && d.converged(o) {
			return fmt.Sprintf("generation %d is already reconciled and converged", o.Metadata.Generation)
		}
	}
	return ""
}

// decodeRef maps a Reference-mode event. An owned object's owner is not in
// the event: its Lookup reads the object. A deleted one cannot be mapped,
// which is why the sources of owned objects use Resource mode.
func (d *Decoder) decodeRef(e *cloudevents.Event) (Target, error) {
	var ref corev1.ObjectReference
	if err := unmarshalData(e, &ref); err != nil {
		return Target{}, err
	}
	gk, err := groupKind(ref.APIVersion, ref.Kind, e)
	if err != nil {
		return Target{}, err
	}
	if ref.Name == "" {
		return Target{}, badEvent("event data has no name")
	}
	if gk == d.Owner {
		t, err := d.ownerKey(ref.Namespace, ref.Name)
		if err == nil && len(t.Keys) > 0 {
			d.Handoff.Forget(t.Keys[0]) // a change, and not its object
		}
		return t, err
	}
	if t, ok := d.config(gk, ref.Namespace, ref.Name); ok {
		return t, nil
	}
	if len(d.resyncSelectors(gk)) > 0 { // no labels to select by
		return Target{Resync: true}, nil
	}
	if slices.Contains(d.Tracked, gk) {
		if err := validObject(gk.Kind, ref.Namespace, ref.Name); err != nil {
			return Target{}, err
		}
		// No labels: only the owners that track the object by name.
		tracked := &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: ref.APIVersion, Kind: ref.Kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name},
		}
		return Target{Lookup: &Lookup{tracked: tracked}}, nil
	}
	owned := d.owned(gk)
	if owned == nil {
		return Target{Ignored: fmt.Sprintf("kind %s is not handled", gk)}, nil
	}
	if err := validObject(gk.Kind, ref.Namespace, ref.Name); err != nil {
		return Target{}, err
	}
	if !d.inScope(ref.Namespace) { // its owner's too: no read
		return d.outOfScope(ref.Namespace), nil
	}
	return Target{Lookup: &Lookup{owned: owned, namespace: ref.Namespace, name: ref.Name}}, nil
}

func (d *Decoder) ownerKey(ns, name string) (Target, error) {
	if err := validObject(d.Owner.Kind, ns, name); err != nil {
		return Target{}, err
	}
	if !d.inScope(ns) {
		return d.outOfScope(ns), nil
	}
	return Target{Keys: []types.NamespacedName{{Namespace: ns, Name: name}}}, nil
}

// inScope tells whether the owners of namespace ns are reconciled (see
// Namespace).
func (d *Decoder) inScope(ns string) bool { return d.Namespace == "" || ns == d.Namespace }

// outOfScope is the Target of an event that concerns owners of namespace
// ns only, outside Namespace.
func (d *Decoder) outOfScope(ns string) Target {
	return Target{Ignored: fmt.Sprintf("namespace %s is not reconciled: only %s is", ns, d.Namespace)}
}

// controllerKey maps an owned object, whose namespace and name the caller
// validated, to its controller ref, if that is of the owner kind.
func (d *Decoder) controllerKey(ns, name string, ref *metav1.OwnerReference) (Target, error) {
	if ref != nil {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.WithKind(ref.Kind).GroupKind() == d.Owner {
			if errs := objectNameErrors(ref.Name); len(errs) > 0 {
				return Target{}, badEvent("event names an invalid %s name %s in its owner reference: %s", d.Owner.Kind, quote(ref.Name), strings.Join(errs, "; "))
			}
			if !d.inScope(ns) {
				return d.outOfScope(ns), nil
			}
			return Target{Keys: []types.NamespacedName{{Namespace: ns, Name: ref.Name}}}, nil
		}
	}
	return Target{Ignored: fmt.Sprintf("%s/%s is not controlled by a %s", ns, name, d.Owner.Kind)}, nil
}

// validObject returns a BadEventError unless ns and name could name a
// namespaced object of kind that the API server
// accepts: a key it could never hold is a poison event, which delivering
// again cannot fix.
func validObject(kind, ns, name string) error {
	if ns == "" {
		return badEvent("event data has no namespace")
	}
	if errs := apivalidation.ValidateNamespaceName(ns, false); len(errs) > 0 {
		return badEvent("event names an invalid namespace %s: %s", quote(ns), strings.Join(errs, "; "))
	}
	if errs := objectNameErrors(name); len(errs) > 0 {
		return badEvent("event names an invalid %s name %s: %s", kind, quote(name), strings.Join(errs, "; "))
	}
	return nil
}

// objectNameErrors says why the API server would refuse name for an object
// of most kinds: a name must be a path segment and a DNS-1123 subdomain.
func objectNameErrors(name string) []string {
	return append(path.IsValidPathSegmentName(name), apivalidation.NameIsDNSSubdomain(name, false)...)
}

// quote quotes s for an answer, cut to its first 64 bytes.
func quote(s string) string {
	const keep = 64
	if len(s) > keep {
		return fmt.Sprintf("%q... (%d bytes)", s[:keep], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// groupKind takes the object's apiVersion and kind from its data, else from
// the event's kind and apiversion extensions, which the adapter also sets.
func groupKind(apiVersion, kind string, e *cloudevents.Event) (schema.GroupKind, error) {
	if apiVersion == "" || kind == "" {
		ext := e.Extensions()
		apiVersion, _ = ext["apiversion"].(string)
		kind, _ = ext["kind"].(string)
	}
	if apiVersion == "" || kind == "" {
		return schema.GroupKind{}, badEvent("event names no apiVersion and kind, in its data or its extensions")
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupKind{}, badEvent("bad apiVersion %q: %v", apiVersion, err)
	}
	return gv.WithKind(kind).GroupKind(), nil
}

func unmarshalData(e *cloudevents.Event, v any) error {
	data := e.Data()
	if len(data) == 0 {
		return badEvent("event %s has no data", e.Type())
	}
	if ct := e.DataContentType(); ct != "" && !isJSONMediaType(ct) {
		return badEvent("event data is %s, want application/json", quote(ct))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return badEvent("event data is not the JSON expected for %s: %v", e.Type(), err)
	}
	return nil
}

// isJSONMediaType tells whether the media type ct is application/json or a
// JSON-based one (a +json suffix), in any case: media types are
// case-insensitive (RFC 9110), and ParseMediaType lowers them.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == cloudevents.ApplicationJSON || strings.HasSuffix(mt, "+json"))
}
