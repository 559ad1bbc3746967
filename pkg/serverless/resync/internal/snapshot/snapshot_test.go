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

package snapshot

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// api is the API server behind the snapshot: it answers 404 to everything,
// and records what reached it.
type api struct{ seen []string }

func (a *api) RoundTrip(req *http.Request) (*http.Response, error) {
	a.seen = append(a.seen, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
	return status(req, apierrs.NewNotFound(corev1.Resource("configmaps"), "x"))
}

func TestSnapshotAnswersWhatItHoldsAndRefusesWrites(t *testing.T) {
	s := New()
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	s.Kind(configMaps, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "owner")
	for _, raw := range []string{
		`{"metadata":{"namespace":"ns","name":"a","labels":{"owner":"o1"}},"data":{"k":"v"}}`,
		`{"metadata":{"namespace":"ns","name":"b","labels":{"owner":"o2"}}}`,
	} {
		if _, err := s.Add(configMaps, []byte(raw)); err != nil {
			t.Fatal(err)
		}
	}
	s.HoldsOwnedBy(configMaps, types.NamespacedName{Namespace: "ns", Name: "o1"})
	next := &api{}
	var writes atomic.Int64
	kc := kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://api.test", Transport: s.Over(next, &writes),
		ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	cms, ctx := kc.CoreV1().ConfigMaps("ns"), context.Background()

	if cm, err := cms.Get(ctx, "a", metav1.GetOptions{}); err != nil || cm.Data["k"] != "v" {
		t.Errorf("GET of a held object = %v, %v; want it", cm, err)
	}
	if _, err := cms.Get(ctx, "c", metav1.GetOptions{}); !apierrs.IsNotFound(err) {
		t.Errorf("GET of another object = %v; want the API server's 404", err)
	}
	l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "owner=o1"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "a" {
		t.Errorf("LIST of an owner's objects = %v, %v; want a, from the snapshot", l, err)
	}
	// Not all of o2's objects are held, nor all of those with other labels.
	for _, sel := range []string{"owner=o2", "owner in (o1,o2)", "", "owner"} {
		if _, err := cms.List(ctx, metav1.ListOptions{LabelSelector: sel}); !apierrs.IsNotFound(err) {
			t.Errorf("LIST by %q = %v; want the API server's answer", sel, err)
		}
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); !apierrs.IsInternalError(err) {
		t.Errorf("CREATE = %v; want it refused", err)
	}
	if err := cms.Delete(ctx, "a", metav1.DeleteOptions{}); err == nil {
		t.Error("DELETE: accepted; want it refused")
	}
	if got := writes.Load(); got != 2 {
		t.Errorf("writes counted: %d, want 2", got)
	}
	if len(next.seen) != 5 {
		t.Errorf("requests that reached the API server: %q; want the GET of c and the 4 LISTs", next.seen)
	}
	for _, r := range next.seen {
		if r[:4] != "GET " {
			t.Errorf("a write reached the API server: %s", r)
		}
	}
}
