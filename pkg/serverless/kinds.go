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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"

	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
)

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

// check tells what is wrong with op's kinds and parts: what Main refuses
// to start with.
func (op Operator) check(parts Parts) error {
	var errs []error
	seen := map[schema.GroupKind]bool{}
	for i, k := range append([]Kind{op.Owner}, kindsOf(op.Owned)...) {
		field := "Operator.Owner"
		if i > 0 {
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
	for gk := range parts.OnDelete {
		if op.owned(gk) == nil {
			errs = append(errs, fmt.Errorf("Parts.OnDelete names %s, which Operator.Owned does not", gk))
		}
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
