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

package ownwrites

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

var deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind()

// apiServer answers writes as the API server does, in the encoding they
// came in, with the object at a new resourceVersion (or 409 for a create of
// "taken"); inFlight reports whether rec saw each create in flight while it
// was being answered.
func apiServer(t *testing.T, rec *Record, contentType string) (*kubernetes.Clientset, func() []bool) {
	t.Helper()
	var (
		mu       sync.Mutex
		rv       = 10
		inFlight []bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
		if err != nil {
			t.Errorf("%s %s (%s): %v", r.Method, r.URL, r.Header.Get("Content-Type"), err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		m, _ := meta.Accessor(obj)
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/deployments") {
			mu.Lock()
			inFlight = append(inFlight, rec.IsOwnAdd(deploymentKind, "ns", m.GetName(), ""))
			mu.Unlock()
			if m.GetName() == "taken" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusConflict)
				_ = json.NewEncoder(w).Encode(apierrs.NewAlreadyExists(appsv1.Resource("deployments"), m.GetName()).Status())
				return
			}
		}
		mu.Lock()
		rv++
		m.SetResourceVersion(strconv.Itoa(rv))
		mu.Unlock()
		m.SetNamespace("ns")
		mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
		out, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, gvk.GroupVersion()), obj)
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", mediaType)
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	cfg := &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: contentType}}
	cfg.Wrap(rec.Transport)
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kc, func() []bool { mu.Lock(); defer mu.Unlock(); return append([]bool(nil), inFlight...) }
}

// A client built on the Transport records the reconciler's writes of
// objects, with no call from the reconciler: a create is in flight while it
// is sent and recorded at the version answered; an update and a status
// update are recorded; a scale update, an Event, a dry run and a refused
// create are not.
func TestTransportRecordsWhatTheClientWrites(t *testing.T) {
	for _, contentType := range []string{"", runtime.ContentTypeJSON} {
		t.Run("content type "+contentType, func(t *testing.T) { recordsWhatTheClientWrites(t, contentType) })
	}
}

// recordsWhatTheClientWrites: client-go sends built-in kinds as protobuf
// unless its config says otherwise.
func recordsWhatTheClientWrites(t *testing.T, contentType string) {
	ctx := context.Background()
	rec := New(0)
	kc, inFlight := apiServer(t, rec, contentType)
	deployments := kc.AppsV1().Deployments("ns")

	d, err := deployments.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := inFlight(); len(got) != 1 || !got[0] {
		t.Errorf("create in flight recognised while it was answered: %v, want [true]", got)
	}
	if d.ResourceVersion != "11" {
		t.Errorf("the client read resourceVersion %q of the answer, want 11: the body must reach it whole", d.ResourceVersion)
	}
	if rec.IsOwnAdd(deploymentKind, "ns", "web", "") {
		t.Error("the create is still in flight after its answer")
	}
	if !rec.IsOwn(deploymentKind, "ns", "web", "11") {
		t.Error("the created Deployment is not recorded at the version answered")
	}

	d.Spec.Replicas = new(int32)
	if d, err = deployments.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !rec.IsOwn(deploymentKind, "ns", "web", d.ResourceVersion) {
		t.Errorf("the update is not recorded at %s", d.ResourceVersion)
	}

	if d, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !rec.Outdates(deploymentKind, "ns", "web", "uid-web") {
		t.Error("the status update is not recorded with the object's uid")
	}
	if !rec.IsOwn(deploymentKind, "ns", "web", d.ResourceVersion) {
		t.Errorf("the status update is not recorded at %s", d.ResourceVersion)
	}

	n := rec.Len()
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}
	if _, err := deployments.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().Events("ns").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := deployments.Update(ctx, d, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if _, err := deployments.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "taken"}}, metav1.CreateOptions{}); !apierrs.IsAlreadyExists(err) {
		t.Fatalf("create of a taken name: %v, want AlreadyExists", err)
	}
	if got := rec.Len(); got != n {
		t.Errorf("%d writes recorded after a scale update, an Event, a dry run and a refused create, want %d", got, n)
	}
	if rec.IsOwnAdd(deploymentKind, "ns", "taken", "") {
		t.Error("a refused create is still in flight")
	}
}

func TestNilRecordsTransportIsTheTransport(t *testing.T) {
	var r *Record
	if got := r.Transport(http.DefaultTransport); got != http.DefaultTransport {
		t.Errorf("a nil Record's Transport = %T, want the transport itself", got)
	}
	if r.Len() != 0 {
		t.Error("a nil Record remembers something")
	}
}
