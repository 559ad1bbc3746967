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

package uncached

import (
	"context"
	"testing"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	duckv1 "knative.dev/pkg/apis/duck/v1"
)

// Ducks' listers read the API server and answer in the duck type; a
// missing object is a NotFound, as from a cache.
func TestDucksReadTheAPIServer(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}
	ksvc := func(ns, name string, labels map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "serving.knative.dev/v1", "kind": "Service",
			"metadata": map[string]any{"namespace": ns, "name": name, "labels": labels},
			"status":   map[string]any{"address": map[string]any{"url": "http://" + name + "." + ns}},
		}}
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ServiceList"},
		ksvc("ns", "a", map[string]any{"sink": "yes"}), ksvc("ns", "b", nil), ksvc("other", "c", map[string]any{"sink": "yes"}))
	_, lister, err := Ducks{Client: client, Type: &duckv1.AddressableType{}}.Get(context.Background(), gvr)
	if err != nil {
		t.Fatal(err)
	}

	obj, err := lister.ByNamespace("ns").Get("a")
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := obj.(*duckv1.AddressableType); !ok || a.Status.Address == nil || a.Status.Address.URL.String() != "http://a.ns" {
		t.Errorf("Get = %#v, want the AddressableType of ns/a", obj)
	}
	if _, err := lister.ByNamespace("ns").Get("missing"); !apierrs.IsNotFound(err) {
		t.Errorf("Get(missing) = %v, want NotFound", err)
	}
	sinks, err := lister.List(labels.SelectorFromSet(labels.Set{"sink": "yes"}))
	if err != nil {
		t.Fatal(err)
	}
	inNS, err := lister.ByNamespace("ns").List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(sinks) != 2 || len(inNS) != 2 {
		t.Errorf("List(sink=yes) = %d objects, List in ns = %d, want 2 and 2", len(sinks), len(inNS))
	}
	if _, ok := sinks[0].(*duckv1.AddressableType); !ok {
		t.Errorf("List gave %T, want *AddressableType", sinks[0])
	}
}
