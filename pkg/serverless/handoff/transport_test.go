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

package handoff

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// A GET of an owner that the Store holds is answered with it, once, by any
// client built on the Transport; everything else reaches the API server.
func TestTransportAnswersAGetWithWhatIsHandedOff(t *testing.T) {
	var sent atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/configmaps") {
			_ = json.NewEncoder(w).Encode(corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}})
			return
		}
		name := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
		_ = json.NewEncoder(w).Encode(corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Data: map[string]string{"v": "read"}})
	}))
	defer srv.Close()
	store := New(0)
	cfg := &rest.Config{Host: srv.URL}
	cfg.Wrap(store.Transport(corev1.SchemeGroupVersion.WithResource("configmaps")))
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := kc.CoreV1().ConfigMaps("ns")
	get := func(name string) string {
		t.Helper()
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Get(%s) = %v", name, err)
		}
		return cm.Data["v"]
	}
	put := func(name, apiVersion string) {
		store.Put(types.NamespacedName{Namespace: "ns", Name: name},
			[]byte(`{"apiVersion":"`+apiVersion+`","kind":"ConfigMap","metadata":{"namespace":"ns","name":"`+name+`"},"data":{"v":"handed off"}}`))
	}

	put("a", "v1")
	if got := get("a"); got != "handed off" || sent.Load() != 0 {
		t.Errorf("Get(a) = %q with %d requests sent, want the object handed off and none", got, sent.Load())
	}
	if got := get("a"); got != "read" || sent.Load() != 1 {
		t.Errorf("Get(a) again = %q with %d requests sent, want it read: taken once", got, sent.Load())
	}
	put("b", "apps/v1") // not of the version asked: read
	if got := get("b"); got != "read" {
		t.Errorf("Get(b) = %q, want it read: handed off in another version", got)
	}
	put("c", "v1")
	if _, err := cms.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().Secrets("ns").Get(ctx, "c", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "c", metav1.GetOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	if store.Len() != 1 || sent.Load() != 5 {
		t.Errorf("a List, a Get of another resource and a Get with options: %d requests sent, %d kept; want 5 sent (a, b and these), c kept", sent.Load(), store.Len())
	}
	if got := get("c"); got != "handed off" {
		t.Errorf("Get(c) = %q, want what was handed off", got)
	}
}
