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

package ownwrites_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/frugal-operator/foo-operator/pkg/serverless/ownwrites"
)

// The clients built from a config wrapped by a Record's Transport record
// what they write; the owned object's event that reports that very write is
// then recognised, and one that reports a later change is not.
func ExampleRecord_Transport() {
	apiServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"ns","name":"web","resourceVersion":"7"}}`)
	}))
	defer apiServer.Close()

	writes := ownwrites.New(0)
	cfg := &rest.Config{Host: apiServer.URL}
	cfg.Wrap(writes.Transport)
	kc := kubernetes.NewForConfigOrDie(cfg)
	_, err := kc.CoreV1().ConfigMaps("ns").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})

	configMap := corev1.SchemeGroupVersion.WithKind("ConfigMap").GroupKind()
	fmt.Println(err, writes.IsOwn(configMap, "ns", "web", "8"), writes.IsOwn(configMap, "ns", "web", "7"))
	// Output: <nil> false true
}
