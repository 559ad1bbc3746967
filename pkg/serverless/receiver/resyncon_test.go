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
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// An event of an object that Decoder.ResyncOn selects asks for a resync,
// whatever its verb; one of the same kind that its selector does not
// select is left to the other kinds (here: not handled). In Reference mode
// there are no labels to select by: every event of the kind resyncs.
func TestDecodeResyncOn(t *testing.T) {
	d, _ := newDecoder()
	d.ResyncOn = []Selection{{Kind: schema.GroupKind{Kind: "ConfigMap"},
		Selector: labels.SelectorFromSet(labels.Set{"networking.knative.dev/trust-bundle": "true"})}}
	configMap := func(verb string, lbls map[string]any) Target {
		t.Helper()
		meta := map[string]any{"name": "bundle", "namespace": "ns", "uid": "cm-1"}
		if lbls != nil {
			meta["labels"] = lbls
		}
		e := adapterEvent("resource", verb, "v1", "ConfigMap", "configmaps", "ns", "bundle",
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta})
		target, err := d.Decode(&e, Sender{})
		if err != nil {
			t.Fatalf("Decode(%s) = %v", verb, err)
		}
		return target
	}
	for _, verb := range []string{"add", "update", "delete"} {
		if got := configMap(verb, map[string]any{"networking.knative.dev/trust-bundle": "true"}); !got.Resync {
			t.Errorf("Decode(%s of a trust bundle) = %+v, want a resync", verb, got)
		}
	}
	for name, lbls := range map[string]map[string]any{"no labels": nil, "another value": {"networking.knative.dev/trust-bundle": "false"}} {
		if got := configMap("update", lbls); got.Resync || got.Ignored == "" {
			t.Errorf("Decode(update of a ConfigMap with %s) = %+v, want it ignored", name, got)
		}
	}
	ref := refEvent("update", "v1", "ConfigMap", "configmaps", "ns", "any")
	if got, err := d.Decode(&ref, Sender{}); err != nil || !got.Resync {
		t.Errorf("Decode(a Reference-mode event of the kind) = %+v, %v, want a resync", got, err)
	}
}
