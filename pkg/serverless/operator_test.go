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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	"knative.dev/pkg/controller"
	pkgreconciler "knative.dev/pkg/reconciler"

	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
)

var (
	foos        = Kind{Resource: schema.GroupVersionResource{Group: "samplecontroller.knative.io", Version: "v1alpha1", Resource: "foos"}, Kind: "Foo"}
	deployments = Kind{Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment"}
	services    = Kind{Resource: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Kind: "Service"}
	configMaps  = Kind{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap"}
)

func noneWoken(context.Context, string, string, string) ([]types.NamespacedName, error) {
	return nil, nil
}

func TestOperatorCheck(t *testing.T) {
	op := Operator{Owner: foos, Owned: []Owned{{Kind: deployments, OwnerLabel: "foo"}, {Kind: services}}}
	good := Parts{Reconciler: &leaderAware{}, OnDelete: map[schema.GroupKind]OnDelete{deployments.GroupKind(): noneWoken}}
	if err := op.check(good); err != nil {
		t.Errorf("check() = %v, want nil", err)
	}
	tracking := Operator{Owner: foos, Owned: op.Owned, Tracked: []Kind{configMaps}}
	if err := tracking.check(Parts{Reconciler: &leaderAware{}, Tracker: NewTracker(context.Background())}); err != nil {
		t.Errorf("check() of an operator that tracks = %v, want nil", err)
	}
	tests := []struct {
		name  string
		op    Operator
		parts Parts
		want  string
	}{{
		name:  "OnDelete of a kind not owned",
		op:    Operator{Owner: foos, Owned: []Owned{{Kind: services}}},
		parts: good,
		want:  "Parts.OnDelete names Deployment.apps, which Operator.Owned does not",
	}, {
		name:  "an owned kind without its resource",
		op:    Operator{Owner: foos, Owned: []Owned{{Kind: Kind{Kind: "Deployment"}}}},
		parts: Parts{Reconciler: &leaderAware{}},
		want:  "Operator.Owned[0] needs a resource (with its version) and a kind",
	}, {
		name:  "a kind named twice",
		op:    Operator{Owner: foos, Owned: []Owned{{Kind: deployments}, {Kind: deployments, OwnerLabel: "foo"}}},
		parts: Parts{Reconciler: &leaderAware{}},
		want:  "Operator.Owned[1]: Deployment.apps is named twice",
	}, {
		name:  "a tracked kind also owned",
		op:    Operator{Owner: foos, Owned: []Owned{{Kind: services}}, Tracked: []Kind{services}},
		parts: Parts{Reconciler: &leaderAware{}, Tracker: NewTracker(context.Background())},
		want:  "Operator.Tracked[0]: Service is named twice",
	}, {
		name:  "tracked kinds without a tracker",
		op:    Operator{Owner: foos, Tracked: []Kind{services}},
		parts: Parts{Reconciler: &leaderAware{}},
		want:  "Operator.Tracked names kinds but Parts.Tracker is nil",
	}, {
		name:  "a tracker without tracked kinds",
		op:    op,
		parts: Parts{Reconciler: &leaderAware{}, Tracker: NewTracker(context.Background())},
		want:  "Parts.Tracker is set but Operator.Tracked names no kind",
	}, {
		name:  "objects that resync without their resource",
		op:    Operator{Owner: foos, ResyncOn: []Selected{{Kind: Kind{Kind: "ConfigMap"}}}},
		parts: Parts{Reconciler: &leaderAware{}},
		want:  "Operator.ResyncOn[0] needs a resource (with its version) and a kind",
	}, {
		name:  "objects that resync selected by a bad selector",
		op:    Operator{Owner: foos, ResyncOn: []Selected{{Kind: configMaps, Selector: "trust bundle=true"}}},
		parts: Parts{Reconciler: &leaderAware{}},
		want:  `Operator.ResyncOn[0]: selector "trust bundle=true"`,
	}, {
		name:  "a reconciler that cannot be promoted",
		op:    op,
		parts: Parts{Reconciler: hiding{&leaderAware{}}},
		want:  "Parts.Reconciler (serverless.hiding) does not implement knative.dev/pkg/reconciler.LeaderAware",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op.check(tc.parts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("check() = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestResyncKindsAreTheLabelledOwnedKinds(t *testing.T) {
	op := Operator{Owner: foos, Owned: []Owned{{Kind: deployments, OwnerLabel: "foo"}, {Kind: services}}}
	want := resync.Kinds{Owner: foos.Resource, Owned: []resync.Owned{{Resource: deployments.Resource, OwnerLabel: "foo"}}}
	if diff := cmp.Diff(want, op.ResyncKinds()); diff != "" {
		t.Errorf("ResyncKinds() (-want +got):\n%s", diff)
	}
}

func TestOwnedObjectsAreReadByTheirResource(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	web := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web"}}
	client := metadatafake.NewSimpleMetadataClient(scheme, web)
	op := Operator{Owner: foos, Owned: []Owned{{Kind: deployments, OwnerLabel: "foo"}, {Kind: services}}}
	owned := op.receiverOwned(client, Parts{OnDelete: map[schema.GroupKind]OnDelete{deployments.GroupKind(): noneWoken}})
	if len(owned) != 2 || owned[0].Kind != deployments.GroupKind() || owned[1].Kind != services.GroupKind() {
		t.Fatalf("receiverOwned() kinds = %v, want Deployment.apps and Service", owned)
	}
	if owned[0].OnDelete == nil || owned[1].OnDelete != nil {
		t.Error("OnDelete is not the parts' for Deployments only")
	}
	got, err := owned[0].Get(context.Background(), "ns", "web")
	if err != nil || got.GetUID() != "uid-web" {
		t.Errorf("Get(ns/web) = %v, %v, want the Deployment", got, err)
	}
	if _, err := owned[1].Get(context.Background(), "ns", "web"); err == nil {
		t.Error("Get(ns/web) of Services found the Deployment")
	}
}

// hiding wraps a reconciler without forwarding Promote.
type hiding struct{ controller.Reconciler }

// leaderAware is a reconciler that can be promoted.
type leaderAware struct{ pkgreconciler.LeaderAwareFuncs }

func (*leaderAware) Reconcile(context.Context, string) error { return nil }
