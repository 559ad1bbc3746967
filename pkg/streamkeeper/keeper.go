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

// Package streamkeeper keeps the shared stream's ApiServerSource
// (docs/shared-stream.md): its resources are the stream's own (source.yaml)
// and those of each member whose kinds the adapter can watch, so that one
// member's fault (its CRD missing, its rights withdrawn) leaves it out
// instead of ending the adapter every member shares.
package streamkeeper

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	rbac "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/validation"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	eventing "knative.dev/eventing/pkg/client/clientset/versioned/typed/eventing/v1"
	sources "knative.dev/eventing/pkg/client/clientset/versioned/typed/sources/v1"
	"sigs.k8s.io/yaml"
)

const (
	// MemberLabel marks a member's Trigger in the stream's namespace.
	MemberLabel = "stream.frugal-operator.dev/member"
	// ResourcesAnnotation on a member's Trigger holds, in YAML, the
	// ApiServerSource resources (apiVersion, kind, selector) the member
	// needs the stream's adapter to watch.
	ResourcesAnnotation = "stream.frugal-operator.dev/resources"
	// ReaderRole is the ClusterRole of the stream's reader (its adapter's
	// ServiceAccount), aggregated from its members'.
	ReaderRole = "operator-stream-watcher"
)

//go:embed source.yaml
var template []byte

// Source returns the stream's ApiServerSource with its own resources only.
func Source() (*sourcesv1.ApiServerSource, error) {
	var s sourcesv1.ApiServerSource
	if err := yaml.UnmarshalStrict(template, &s); err != nil {
		return nil, fmt.Errorf("the stream's source template: %w", err)
	}
	return &s, nil
}

// Declared returns the resources a member's Trigger declares.
func Declared(tr *eventingv1.Trigger) ([]sourcesv1.APIVersionKindSelector, error) {
	v, ok := tr.Annotations[ResourcesAnnotation]
	if !ok {
		return nil, fmt.Errorf("Trigger %s/%s has no %s annotation", tr.Namespace, tr.Name, ResourcesAnnotation)
	}
	var rs []sourcesv1.APIVersionKindSelector
	if err := yaml.UnmarshalStrict([]byte(v), &rs); err != nil {
		return nil, fmt.Errorf("Trigger %s/%s: its %s annotation: %w", tr.Namespace, tr.Name, ResourcesAnnotation, err)
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("Trigger %s/%s: its %s annotation names no resource", tr.Namespace, tr.Name, ResourcesAnnotation)
	}
	return rs, nil
}

// Compose returns source with each member's declared resources appended
// after its own, in the order of members, an entry named twice kept once.
func Compose(source *sourcesv1.ApiServerSource, members ...[]sourcesv1.APIVersionKindSelector) *sourcesv1.ApiServerSource {
	s := source.DeepCopy()
	for _, m := range members {
		for _, r := range m {
			if !slices.ContainsFunc(s.Spec.Resources, func(o sourcesv1.APIVersionKindSelector) bool { return equality.Semantic.DeepEqual(o, r) }) {
				s.Spec.Resources = append(s.Spec.Resources, r)
			}
		}
	}
	return s
}

// Keeper makes the stream's ApiServerSource from its members' Triggers.
type Keeper struct {
	Triggers  eventing.EventingV1Interface
	Sources   sources.SourcesV1Interface
	Roles     rbac.RbacV1Interface
	CRDs      apiextensions.ApiextensionsV1Interface
	Discovery discovery.DiscoveryInterface
}

// Left is a member left out of the source, and why.
type Left struct {
	Trigger *eventingv1.Trigger
	Reason  error
}

// Kept is what Keep did.
type Kept struct {
	Members []string // the Triggers whose resources the source watches
	Left    []Left
	Changed bool // the source was made or its resources changed
}

// Keep makes the source, or updates its resources, to watch the stream's own
// resources and those of every member the adapter can watch: each of its
// kinds served (a CRD established, not being deleted) and listed and
// watched by the reader's ClusterRole. A member with any kind it cannot is
// left out whole. An error means the source may be out of date: call again.
func (k *Keeper) Keep(ctx context.Context) (Kept, error) {
	base, err := Source()
	if err != nil {
		return Kept{}, err
	}
	triggers, err := k.Triggers.Triggers(base.Namespace).List(ctx, metav1.ListOptions{LabelSelector: MemberLabel + "=true"})
	if err != nil {
		return Kept{}, fmt.Errorf("listing the members' Triggers: %w", err)
	}
	role, err := k.Roles.ClusterRoles().Get(ctx, ReaderRole, metav1.GetOptions{})
	if err != nil {
		return Kept{}, fmt.Errorf("reading the reader's ClusterRole: %w", err)
	}
	slices.SortFunc(triggers.Items, func(a, b eventingv1.Trigger) int { return strings.Compare(a.Name, b.Name) })
	var kept Kept
	var members [][]sourcesv1.APIVersionKindSelector
	for i := range triggers.Items {
		tr := &triggers.Items[i]
		rs, err := Declared(tr)
		if err != nil {
			err = &fault{err.Error()}
		} else {
			err = k.watchable(ctx, role.Rules, rs)
		}
		var f *fault
		switch {
		case errors.As(err, &f):
			kept.Left = append(kept.Left, Left{tr, err})
		case err != nil:
			return Kept{}, err
		default:
			kept.Members = append(kept.Members, tr.Name)
			members = append(members, rs)
		}
	}
	want := Compose(base, members...)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := k.Sources.ApiServerSources(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = k.Sources.ApiServerSources(want.Namespace).Create(ctx, want, metav1.CreateOptions{})
			kept.Changed = err == nil
			return err
		}
		if err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(cur.Spec.Resources, want.Spec.Resources) {
			return nil
		}
		cur.Spec.Resources = want.Spec.Resources
		_, err = k.Sources.ApiServerSources(want.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		kept.Changed = err == nil
		return err
	})
	if err != nil {
		return Kept{}, fmt.Errorf("writing ApiServerSource %s/%s: %w", want.Namespace, want.Name, err)
	}
	return kept, nil
}

// fault is why a member's kinds cannot be watched; other errors are the
// keeper's own (the API server unreachable) and fail Keep.
type fault struct{ msg string }

func (f *fault) Error() string { return f.msg }

// watchable returns a *fault if the adapter could not watch one of rs: a
// kind not served, or not listed and watched by rules.
func (k *Keeper) watchable(ctx context.Context, rules []rbacv1.PolicyRule, rs []sourcesv1.APIVersionKindSelector) error {
	for _, r := range rs {
		gv, err := schema.ParseGroupVersion(r.APIVersion)
		if err != nil {
			return &fault{fmt.Sprintf("apiVersion %q: %v", r.APIVersion, err)}
		}
		resource, err := k.served(ctx, rules, gv, r.Kind)
		if err != nil {
			return err
		}
		need := rbacv1.PolicyRule{APIGroups: []string{gv.Group}, Resources: []string{resource}, Verbs: []string{"list", "watch"}}
		if ok, _ := validation.Covers(rules, []rbacv1.PolicyRule{need}); !ok {
			return &fault{fmt.Sprintf("ClusterRole %s does not grant list and watch on %s: the member's ClusterRole, labelled stream.frugal-operator.dev/aggregate-to-watcher, is missing or lacks them", ReaderRole, schema.GroupResource{Group: gv.Group, Resource: resource})}
		}
	}
	return nil
}

// served returns the resource of kind in gv, or a *fault if the API server
// does not serve it, or serves it from a CRD not established or being
// deleted (the adapter's watch would end with it).
func (k *Keeper) served(ctx context.Context, rules []rbacv1.PolicyRule, gv schema.GroupVersion, kind string) (string, error) {
	list, err := k.Discovery.ServerResourcesForGroupVersion(gv.String())
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("discovering %s: %w", gv, err)
	}
	i := -1
	if err == nil {
		i = slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == kind && !strings.Contains(r.Name, "/") })
	}
	if i < 0 {
		return "", k.undiscovered(ctx, rules, gv, kind)
	}
	resource := list.APIResources[i].Name
	if gv.Group == "" {
		return resource, nil
	}
	crd, err := k.CRDs.CustomResourceDefinitions().Get(ctx, resource+"."+gv.Group, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err): // built in, or an aggregated API
		return resource, nil
	case err != nil:
		return "", fmt.Errorf("reading CRD %s.%s: %w", resource, gv.Group, err)
	case crd.DeletionTimestamp != nil:
		return "", &fault{fmt.Sprintf("CRD %s is being deleted", crd.Name)}
	case !established(crd):
		return "", &fault{fmt.Sprintf("CRD %s is not established", crd.Name)}
	}
	return resource, nil
}

// undiscovered returns why kind in gv is not discovered: a *fault, unless a
// CRD serving it is established (discovery lags its CRD by a moment), which
// is an error, so that the event that woke the keeper is sent again. The
// CRD's name is its resource's: those the rules grant in the group are
// tried.
func (k *Keeper) undiscovered(ctx context.Context, rules []rbacv1.PolicyRule, gv schema.GroupVersion, kind string) error {
	for _, rule := range rules {
		if !slices.Contains(rule.APIGroups, gv.Group) {
			continue
		}
		for _, resource := range rule.Resources {
			crd, err := k.CRDs.CustomResourceDefinitions().Get(ctx, resource+"."+gv.Group, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return fmt.Errorf("reading CRD %s.%s: %w", resource, gv.Group, err)
			case crd.Spec.Names.Kind != kind || !established(crd) || crd.DeletionTimestamp != nil:
				continue
			}
			return fmt.Errorf("CRD %s is established, but discovery does not serve %s %s yet", crd.Name, gv, kind)
		}
	}
	return &fault{fmt.Sprintf("%s %s is not served (its CRD is not installed?)", gv, kind)}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
