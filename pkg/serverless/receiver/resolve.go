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
	"fmt"
	"slices"
	"strings"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Resolve does the read t.Lookup asks for, if any, and returns what the
// event asks for once it is done. Errors are BadEventErrors when the event
// cannot be used, other errors when reading the API server failed.
// Lookups of one object arriving together (a flood of forged deletes, say)
// share one read.
func (d *Decoder) Resolve(ctx context.Context, t Target) (Target, error) {
	l := t.Lookup
	if l == nil {
		return t, nil
	}
	t.Lookup = nil
	if l.tracked != nil {
		return d.resolveTracked(ctx, l.tracked)
	}
	if l.config != "" {
		return d.reloadConfig(ctx, l.config)
	}
	if l.deleted {
		return d.resolveDelete(ctx, t, l)
	}
	kind := strings.ToLower(l.owned.Kind.Kind)
	obj, err := d.get(ctx, l)
	if apierrs.IsNotFound(err) {
		return Target{Ignored: fmt.Sprintf("%s %s/%s no longer exists, its owner is unknown", kind, l.namespace, l.name)}, nil
	}
	if err != nil {
		return Target{}, fmt.Errorf("failed to get %s %s/%s: %w", kind, l.namespace, l.name, err)
	}
	return d.controllerKey(l.namespace, l.name, metav1.GetControllerOfNoCopy(obj))
}

// resolveTracked returns the owners that track obj, once a resync has
// listed every owner: the dry runs of its reconciles track what each owner
// references, so that the owners a new process has not yet reconciled are
// known too. If none has listed before ctx is done (the cold start's
// resync failing, or off), the event is answered 503, to come again.
func (d *Decoder) resolveTracked(ctx context.Context, obj *metav1.PartialObjectMetadata) (Target, error) {
	select {
	case <-d.waiting.listedSignal():
	case <-ctx.Done():
		return Target{}, fmt.Errorf("the owners that track %s %s/%s are not known yet: no resync has listed every owner since the process started",
			strings.ToLower(obj.Kind), obj.Namespace, obj.Name)
	}
	keys := d.Observers(obj)
	if len(keys) == 0 {
		return Target{Ignored: fmt.Sprintf("no %s tracks %s %s/%s", d.Owner.Kind, strings.ToLower(obj.Kind), obj.Namespace, obj.Name)}, nil
	}
	if in := slices.DeleteFunc(slices.Clone(keys), func(k types.NamespacedName) bool { return !d.inScope(k.Namespace) }); len(in) < len(keys) {
		if len(in) == 0 {
			return d.outOfScope(keys[0].Namespace), nil
		}
		keys = in
	}
	return Target{Keys: keys}, nil
}

// reloadConfig applies ConfigMap name of Configs' namespace, if the
// operator's parts watch it, and then asks for a resync. The event is
// answered once the resync has reconciled what the change asks for.
func (d *Decoder) reloadConfig(ctx context.Context, name string) (Target, error) {
	watched, err := d.Configs.Reload(ctx, name)
	switch {
	case err != nil:
		return Target{}, fmt.Errorf("failed to apply ConfigMap %s/%s: %w", d.Configs.Namespace(), name, err)
	case !watched:
		return Target{Ignored: fmt.Sprintf("ConfigMap %s/%s is not watched", d.Configs.Namespace(), name)}, nil
	}
	return Target{Resync: true}, nil
}

// resolveDelete believes the delete that t reports only once its object is
// seen gone: then its owner is reconciled, and so are the owners the delete
// frees a name for (Owned.OnDelete). An object still there, or made again
// by its owner since, makes the delete a forged or a repeated one: ignored.
// If the read fails, the delete is believed, as without Owned.Get.
func (d *Decoder) resolveDelete(ctx context.Context, t Target, l *Lookup) (Target, error) {
	holder := t.Keys[0].Name
	if l.owned.Get != nil {
		obj, err := d.get(ctx, l)
		switch {
		case err != nil:
		case obj.GetUID() == l.uid:
			return Target{Ignored: fmt.Sprintf("%s %s/%s is not deleted", strings.ToLower(l.owned.Kind.Kind), l.namespace, l.name)}, nil
		case d.controlledBy(obj, holder):
			return Target{Ignored: fmt.Sprintf("%s %s/%s was made again by its %s since", strings.ToLower(l.owned.Kind.Kind), l.namespace, l.name, d.Owner.Kind)}, nil
		}
	}
	if l.owned.OnDelete == nil || !d.waiting.mayWaitIn(l.namespace, holder) {
		return t, nil // nobody but its owner can want the name: no lookup
	}
	found, err, _ := d.lookups.Do(strings.Join([]string{"claimants", l.owned.Kind.String(), l.namespace, l.name, holder}, "/"), func() (any, error) {
		return l.owned.OnDelete(ctx, l.namespace, l.name, holder)
	})
	if err != nil {
		return Target{}, err
	}
	t.Keys = append(t.Keys, found.([]types.NamespacedName)...)
	return t, nil
}

// get reads the object l names, sharing the read with the lookups of the
// same object in flight.
func (d *Decoder) get(ctx context.Context, l *Lookup) (metav1.Object, error) {
	obj, err, _ := d.lookups.Do(strings.Join([]string{"get", l.owned.Kind.String(), l.namespace, l.name}, "/"), func() (any, error) {
		return l.owned.Get(ctx, l.namespace, l.name)
	})
	if err != nil {
		return nil, err
	}
	return obj.(metav1.Object), nil
}

// controlledBy tells whether obj's controller is the owner named name.
func (d *Decoder) controlledBy(obj metav1.Object, name string) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Name != name {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.WithKind(ref.Kind).GroupKind() == d.Owner
}
