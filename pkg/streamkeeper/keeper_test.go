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

package streamkeeper

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	eventingfake "knative.dev/eventing/pkg/client/clientset/versioned/fake"
)

func member(name, resources string) *eventingv1.Trigger {
	return &eventingv1.Trigger{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "operator-stream",
		Labels:      map[string]string{MemberLabel: "true"},
		Annotations: map[string]string{ResourcesAnnotation: resources},
	}}
}

func crd(name string, established bool, deleting bool) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	c.Spec.Names.Kind = map[string]string{"foos.samplecontroller.knative.io": "Foo", "bars.example.frugal-operator.dev": "Bar"}[name]
	status := apiextensionsv1.ConditionFalse
	if established {
		status = apiextensionsv1.ConditionTrue
	}
	c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: status}}
	if deleting {
		c.DeletionTimestamp = &metav1.Time{}
		c.Finalizers = []string{"customresourcecleanup.apiextensions.k8s.io"}
	}
	return c
}

func reader(rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ReaderRole}, Rules: rules}
}

func rule(group, resource string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: verbs}
}

const (
	foos = `
- apiVersion: samplecontroller.knative.io/v1alpha1
  kind: Foo
- apiVersion: apps/v1
  kind: Deployment
  selector:
    matchExpressions:
    - {key: samplecontroller.knative.io/foo, operator: Exists}
`
	bars = `
- apiVersion: example.frugal-operator.dev/v1alpha1
  kind: Bar
`
)

// keeper returns a Keeper on fakes serving Foos, Deployments and (if barCRD
// is not nil) Bars, with the reader's rules and the objects given.
func keeper(t *testing.T, barCRD *apiextensionsv1.CustomResourceDefinition, role *rbacv1.ClusterRole, objs ...runtime.Object) (*Keeper, *eventingfake.Clientset) {
	t.Helper()
	kube := kubefake.NewSimpleClientset(role)
	disco := kube.Discovery().(*fakediscovery.FakeDiscovery)
	disco.Resources = []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment", Namespaced: true}, {Name: "deployments/status", Kind: "Deployment"}}},
		{GroupVersion: "samplecontroller.knative.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "foos", Kind: "Foo", Namespaced: true}}},
	}
	crds := []runtime.Object{crd("foos.samplecontroller.knative.io", true, false)}
	if barCRD != nil {
		disco.Resources = append(disco.Resources, &metav1.APIResourceList{GroupVersion: "example.frugal-operator.dev/v1alpha1", APIResources: []metav1.APIResource{{Name: "bars", Kind: "Bar", Namespaced: true}}})
		crds = append(crds, barCRD)
	}
	ev := eventingfake.NewSimpleClientset(objs...)
	return &Keeper{
		Triggers:  ev.EventingV1(),
		Sources:   ev.SourcesV1(),
		Roles:     kube.RbacV1(),
		CRDs:      apiextensionsfake.NewSimpleClientset(crds...).ApiextensionsV1(),
		Discovery: disco,
	}, ev
}

var allRights = reader(rule("samplecontroller.knative.io", "foos", "get", "list", "watch"), rule("apps", "deployments", "get", "list", "watch"), rule("example.frugal-operator.dev", "bars", "get", "list", "watch"))

// kinds returns the kinds the stream's source watches, in order.
func kinds(t *testing.T, ev *eventingfake.Clientset) []string {
	t.Helper()
	s, err := ev.SourcesV1().ApiServerSources("operator-stream").Get(context.Background(), "operators", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, r := range s.Spec.Resources {
		ks = append(ks, r.Kind)
	}
	return ks
}

var own = []string{"Pod", "Trigger", "CustomResourceDefinition", "ClusterRole"}

func TestKeepComposesTheMembersItCanWatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		barCRD *apiextensionsv1.CustomResourceDefinition
		role   *rbacv1.ClusterRole
		bar    string // Bar's annotation
		left   string // why Bar is left out, or "" if it is kept
	}{
		{name: "both kept", barCRD: crd("bars.example.frugal-operator.dev", true, false), role: allRights, bar: bars},
		{name: "CRD missing", role: allRights, bar: bars, left: "example.frugal-operator.dev/v1alpha1 Bar is not served"},
		{name: "CRD not established", barCRD: crd("bars.example.frugal-operator.dev", false, false), role: allRights, bar: bars, left: "CRD bars.example.frugal-operator.dev is not established"},
		{name: "CRD being deleted", barCRD: crd("bars.example.frugal-operator.dev", true, true), role: allRights, bar: bars, left: "CRD bars.example.frugal-operator.dev is being deleted"},
		{name: "rights withdrawn", barCRD: crd("bars.example.frugal-operator.dev", true, false), role: reader(allRights.Rules[:2]...), bar: bars, left: "does not grant list and watch on bars.example.frugal-operator.dev"},
		{name: "watch withdrawn", barCRD: crd("bars.example.frugal-operator.dev", true, false), role: reader(append(allRights.Rules[:2:2], rule("example.frugal-operator.dev", "bars", "list"))...), bar: bars, left: "does not grant list and watch"},
		{name: "annotation malformed", barCRD: crd("bars.example.frugal-operator.dev", true, false), role: allRights, bar: "- kind: [Bar]", left: "its stream.frugal-operator.dev/resources annotation"},
		{name: "annotation empty", barCRD: crd("bars.example.frugal-operator.dev", true, false), role: allRights, bar: "", left: "names no resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, ev := keeper(t, tc.barCRD, tc.role, member("foo-reconciler", foos), member("bar-reconciler", tc.bar))
			kept, err := k.Keep(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := append(own, "Foo", "Deployment")
			wantMembers := []string{"foo-reconciler"}
			if tc.left == "" {
				want = append(own, "Bar", "Foo", "Deployment") // members in the order of their names
				wantMembers = []string{"bar-reconciler", "foo-reconciler"}
			}
			if diff := cmp.Diff(want, kinds(t, ev)); diff != "" {
				t.Error("the source's kinds (-want, +got):", diff)
			}
			if diff := cmp.Diff(wantMembers, kept.Members); diff != "" {
				t.Error("members kept (-want, +got):", diff)
			}
			switch {
			case tc.left == "" && len(kept.Left) > 0:
				t.Errorf("left out: %v", kept.Left[0].Reason)
			case tc.left != "" && (len(kept.Left) != 1 || kept.Left[0].Trigger.Name != "bar-reconciler" || !strings.Contains(kept.Left[0].Reason.Error(), tc.left)):
				t.Errorf("left out: %+v, want bar-reconciler for %q", kept.Left, tc.left)
			}
			if !kept.Changed {
				t.Error("the source was made, but Keep says it did not change")
			}
		})
	}
}

func TestKeepUpdatesOnlyWhatChanged(t *testing.T) {
	existing, err := Source()
	if err != nil {
		t.Fatal(err)
	}
	existing.Spec.Resources = append(existing.Spec.Resources, sourcesv1.APIVersionKindSelector{APIVersion: "example.frugal-operator.dev/v1alpha1", Kind: "Bar"})
	existing.Annotations["users-own"] = "kept"
	k, ev := keeper(t, nil, allRights, existing, member("foo-reconciler", foos))
	kept, err := k.Keep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(own, "Foo", "Deployment"), kinds(t, ev)); diff != "" || !kept.Changed {
		t.Errorf("a member gone is not dropped (changed %v); the source's kinds (-want, +got): %s", kept.Changed, diff)
	}
	s, _ := ev.SourcesV1().ApiServerSources("operator-stream").Get(context.Background(), "operators", metav1.GetOptions{})
	if s.Annotations["users-own"] != "kept" {
		t.Error("Keep changed more than the source's resources")
	}
	ev.ClearActions()
	if kept, err = k.Keep(context.Background()); err != nil || kept.Changed {
		t.Fatalf("kept again: changed %v, %v", kept.Changed, err)
	}
	for _, a := range ev.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "get" {
			t.Errorf("nothing to change, yet Keep did %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// A CRD established a moment before discovery serves it: Keep fails, so
// that the event is sent again, rather than leave the member out until the
// next event.
func TestKeepWaitsForDiscoveryToServeAnEstablishedCRD(t *testing.T) {
	k, _ := keeper(t, nil, allRights, member("foo-reconciler", foos), member("bar-reconciler", bars))
	if _, err := k.CRDs.CustomResourceDefinitions().Create(context.Background(), crd("bars.example.frugal-operator.dev", true, false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Keep(context.Background()); err == nil || !strings.Contains(err.Error(), "discovery does not serve") {
		t.Fatalf("Keep with Bar's CRD established, not yet discovered: %v, want an error", err)
	}
}

func TestKeepFailsWithoutTheReadersRole(t *testing.T) {
	k, _ := keeper(t, nil, reader(), member("foo-reconciler", foos))
	if err := k.Roles.ClusterRoles().Delete(context.Background(), ReaderRole, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Keep(context.Background()); err == nil || !strings.Contains(err.Error(), "reading the reader's ClusterRole") {
		t.Fatalf("Keep without the reader's ClusterRole: %v, want an error naming it", err)
	}
}

func TestComposeKeepsAnEntryOnce(t *testing.T) {
	base, err := Source()
	if err != nil {
		t.Fatal(err)
	}
	dep := sourcesv1.APIVersionKindSelector{APIVersion: "apps/v1", Kind: "Deployment"}
	got := Compose(base, []sourcesv1.APIVersionKindSelector{dep}, []sourcesv1.APIVersionKindSelector{dep, base.Spec.Resources[0]})
	if n := len(got.Spec.Resources); n != len(base.Spec.Resources)+1 {
		t.Errorf("%d resources, want the stream's %d and the Deployment once", n, len(base.Spec.Resources))
	}
}
