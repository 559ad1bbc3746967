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

package serverlesstest

import (
	"errors"
	"fmt"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	"sigs.k8s.io/yaml"

	"github.com/frugal-operator/foo-operator/pkg/serverless"
	"github.com/frugal-operator/foo-operator/pkg/serverless/receiver"
)

// CheckSources tells how the ApiServerSources that send op its events (in
// direct wiring) differ from op's kinds: each kind, the owner's, every
// owned one and every tracked one, watched by one of them, an owned kind with an OwnerLabel only
// where it carries that label (else every object of the kind in the
// cluster wakes the reconciler), no kind that op does not name, and each
// source watching its own adapter's pod (whose start asks for a resync).
// An operator's test runs it over its config/.
func CheckSources(op serverless.Operator, sources ...*sourcesv1.ApiServerSource) error {
	var errs []error
	watched := map[string]bool{}
	config := false
	resyncOn := make([]bool, len(op.ResyncOn))
	for _, src := range sources {
		adapter := false
		for _, r := range src.Spec.Resources {
			key := r.APIVersion + " " + r.Kind
			resync := resyncOnIndex(op, r)
			if resync >= 0 {
				resyncOn[resync] = true
			}
			switch kind, owned := named(op, r.APIVersion, r.Kind); {
			case r.APIVersion == "v1" && r.Kind == "Pod" && watchesAdapter(r.LabelSelector, src.Name):
				adapter = true
				continue
			case kind == nil && op.FollowConfig && r.APIVersion == "v1" && r.Kind == "ConfigMap" && watchesConfig(r.LabelSelector, op.Name):
				config = true
				continue
			case kind == nil && resync >= 0:
				continue
			case kind == nil:
				errs = append(errs, fmt.Errorf("ApiServerSource %s watches %s, which the operator does not name", src.Name, key))
			case owned != nil && owned.OwnerLabel != "" && !requires(r.LabelSelector, owned.OwnerLabel):
				errs = append(errs, fmt.Errorf("ApiServerSource %s watches every %s, not only those labelled %s", src.Name, key, owned.OwnerLabel))
			case owned == nil && src.Spec.ResourceOwner != nil:
				errs = append(errs, fmt.Errorf("ApiServerSource %s passes only owned objects, so none of %s, which the operator does not own", src.Name, key))
			}
			watched[key] = true
		}
		if !adapter {
			errs = append(errs, fmt.Errorf("ApiServerSource %s does not watch its adapter's pod (v1 Pod labelled %s=%s, eventing.knative.dev/sourceName=%s)",
				src.Name, receiver.AdapterLabel, receiver.AdapterLabelValue, src.Name))
		}
	}
	kinds := []serverless.Kind{op.Owner}
	for _, o := range op.Owned {
		kinds = append(kinds, o.Kind)
	}
	kinds = append(kinds, op.Tracked...)
	if op.FollowConfig && !config && !watched["v1 ConfigMap"] {
		errs = append(errs, fmt.Errorf("the operator follows its configuration, but no ApiServerSource watches its ConfigMaps (v1 ConfigMap labelled %s=%s)",
			serverless.ConfigLabel, op.Name))
	}
	for _, k := range kinds {
		if key := k.Resource.GroupVersion().String() + " " + k.Kind; !watched[key] {
			errs = append(errs, fmt.Errorf("no ApiServerSource watches %s", key))
		}
	}
	for i, r := range op.ResyncOn {
		if !resyncOn[i] {
			errs = append(errs, fmt.Errorf("no ApiServerSource watches %s %s selected by %q (Operator.ResyncOn[%d]), with that selector",
				r.Resource.GroupVersion(), r.Kind.Kind, r.Selector, i))
		}
	}
	return errors.Join(errs...)
}

// FailFastAnnotation puts an ApiServerSource's adapter in fail-fast mode:
// a watch that cannot resume, after an API server's restart, ends the
// adapter, whose new start asks for a resync, where a resilient one would
// relist and send nothing for what changed (see receiver.AdapterLabel).
const FailFastAnnotation = "features.knative.dev/apiserversource-skip-permissions-check"

// CheckSourcesFile checks the direct wiring in the YAML file path (an
// operator's config/600-sources.yaml): one ApiServerSource (each is an
// always-on adapter pod), in fail-fast mode (FailFastAnnotation "true"),
// that sends op what it names (CheckSources).
func CheckSourcesFile(op serverless.Operator, path string) error {
	sources, err := SourcesIn(path)
	if err != nil {
		return err
	}
	var errs []error
	if len(sources) != 1 {
		errs = append(errs, fmt.Errorf("%s: %d ApiServerSources, want 1: each is an always-on adapter pod", path, len(sources)))
	}
	for _, s := range sources {
		if s.Annotations[FailFastAnnotation] != "true" {
			errs = append(errs, fmt.Errorf("ApiServerSource %s is not in fail-fast mode (annotation %s: \"true\"): after an API server's restart it would relist and send nothing for what changed",
				s.Name, FailFastAnnotation))
		}
	}
	if err := CheckSources(op, sources...); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// SourcesIn returns the ApiServerSources of the YAML file path (documents
// separated by ---), each decoded strictly: a field that is not
// ApiServerSource's is an error that names the file.
func SourcesIn(path string) ([]*sourcesv1.ApiServerSource, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var sources []*sourcesv1.ApiServerSource
	for _, doc := range strings.Split(string(b), "\n---\n") {
		if !strings.Contains(doc, "\nkind: ApiServerSource\n") {
			continue
		}
		src := &sourcesv1.ApiServerSource{}
		if err := yaml.UnmarshalStrict([]byte(doc), src); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		sources = append(sources, src)
	}
	return sources, nil
}

// named returns op's kind of apiVersion and kind, and its Owned if owned.
func named(op serverless.Operator, apiVersion, kind string) (*serverless.Kind, *serverless.Owned) {
	if op.Owner.Resource.GroupVersion().String() == apiVersion && op.Owner.Kind == kind {
		return &op.Owner, nil
	}
	for i, o := range op.Owned {
		if o.Resource.GroupVersion().String() == apiVersion && o.Kind.Kind == kind {
			return &op.Owned[i].Kind, &op.Owned[i]
		}
	}
	for i, k := range op.Tracked {
		if k.Resource.GroupVersion().String() == apiVersion && k.Kind == kind {
			return &op.Tracked[i], nil
		}
	}
	return nil, nil
}

// resyncOnIndex returns the index in op.ResyncOn of what r watches, with
// the same selector, or -1.
func resyncOnIndex(op serverless.Operator, r sourcesv1.APIVersionKindSelector) int {
	sel, err := metav1.LabelSelectorAsSelector(r.LabelSelector)
	if err != nil {
		return -1
	}
	for i, o := range op.ResyncOn {
		want, err := labels.Parse(o.Selector)
		if err == nil && o.Resource.GroupVersion().String() == r.APIVersion && o.Kind.Kind == r.Kind && want.String() == sel.String() {
			return i
		}
	}
	return -1
}

// watchesAdapter tells whether sel selects the adapter pods of the source
// named source only.
func watchesAdapter(sel *metav1.LabelSelector, source string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return sel != nil && err == nil && s.Matches(labels.Set{receiver.AdapterLabel: receiver.AdapterLabelValue, "eventing.knative.dev/sourceName": source}) &&
		!s.Matches(labels.Set{receiver.AdapterLabel: receiver.AdapterLabelValue, "eventing.knative.dev/sourceName": source + "-other"})
}

// watchesConfig tells whether sel selects the ConfigMaps that configure
// the operator named name only.
func watchesConfig(sel *metav1.LabelSelector, name string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return sel != nil && err == nil && s.Matches(labels.Set{serverless.ConfigLabel: name}) && !s.Matches(labels.Set{serverless.ConfigLabel: name + "-other"})
}

// requires tells whether sel selects only objects that carry label.
func requires(sel *metav1.LabelSelector, label string) bool {
	if sel == nil {
		return false
	}
	if _, ok := sel.MatchLabels[label]; ok {
		return true
	}
	for _, e := range sel.MatchExpressions {
		if e.Key == label && (e.Operator == metav1.LabelSelectorOpExists || e.Operator == metav1.LabelSelectorOpIn) {
			return true
		}
	}
	return false
}
