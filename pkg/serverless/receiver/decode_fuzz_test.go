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
	"net/http"
	"testing"
)

// FuzzDecode feeds arbitrary types and bodies, in binary mode, through the
// same parsing the server does, then through Decode. Decode must not panic,
// must classify every failure, and every key it returns must be one the API
// server could hold.
func FuzzDecode(f *testing.F) {
	for _, e := range [][2]string{
		{"dev.knative.apiserver.resource.add", `{"apiVersion":"samplecontroller.knative.io/v1alpha1","kind":"Foo","metadata":{"name":"a","namespace":"ns"}}`},
		{"dev.knative.apiserver.resource.delete", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"ns","ownerReferences":[{"apiVersion":"samplecontroller.knative.io/v1alpha1","kind":"Foo","name":"a","uid":"u","controller":true}]}}`},
		{"dev.knative.apiserver.ref.update", `{"kind":"Foo","namespace":"ns","name":"a","apiVersion":"samplecontroller.knative.io/v1alpha1"}`},
		{"dev.knative.apiserver.ref.update", `{"kind":"Deployment","namespace":"ns","name":"web","apiVersion":"apps/v1"}`},
		{"dev.knative.sources.ping", `{}`},
		{"dev.knative.apiserver.resource.add", `{"metadata":{"name":""}}`},
		{"dev.knative.apiserver.resource.add", `{"apiVersion":"/","kind":"Foo"}`},
		{"dev.knative.apiserver.resource.update", `[]`},
		{"x", `null`},
	} {
		f.Add(e[0], "Foo", "samplecontroller.knative.io/v1alpha1", []byte(e[1]))
	}
	d, _ := newDecoder(ownedDeployment("ns", "web", "a"))
	f.Fuzz(func(t *testing.T, typ, kind, apiVersion string, body []byte) {
		h := http.Header{}
		h.Set("Ce-Specversion", "1.0")
		h.Set("Ce-Id", "1")
		h.Set("Ce-Source", apiServerURL)
		h.Set("Ce-Type", typ)
		h.Set("Ce-Kind", kind)
		h.Set("Ce-Apiversion", apiVersion)
		h.Set("Content-Type", "application/json")
		e, err := parseEvent(context.Background(), h, body)
		if err != nil {
			if !IsBadEvent(err) {
				t.Fatalf("parseEvent() = %v, want a BadEventError", err)
			}
			return // the server answers 400 before decoding
		}
		got, err := decodeAndResolve(d, e, Sender{})
		if err != nil {
			if !IsBadEvent(err) {
				t.Fatalf("Decode() = %v: only Reference-mode reads may fail otherwise, and none fails here", err)
			}
			return
		}
		if got.Ignored != "" && (got.Resync || len(got.Keys) > 0) {
			t.Fatalf("Decode() = %+v: ignored, yet asks for work", got)
		}
		for _, k := range got.Keys {
			if err := validObject("Foo", k.Namespace, k.Name); err != nil {
				t.Fatalf("Decode() = %+v: a key the API server would refuse: %v", got, err)
			}
		}
	})
}
