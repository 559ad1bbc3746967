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

package resync_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/controller"

	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync/resynctest"
)

// The owners of these tests are ConfigMaps asking, in data["deployment"],
// for a Deployment of data["replicas"] replicas, labelled "owner" with the
// owner's name. The reconciler reads the owner, then its Deployment; it
// creates a missing one, updates a drifted one, and refuses a foreign one
// (not labelled as the owner's) with a permanent error. One whose
// data["later"] is set asks to be run again in a minute.
func owner(ns, name, deployment string, replicas int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string]string{"deployment": deployment, "replicas": strconv.Itoa(replicas)}}
}

// later marks o as asking to be run again later.
func later(o *corev1.ConfigMap) *corev1.ConfigMap {
	o.Data["later"] = "true"
	return o
}

func owned(ns, name, owner string, replicas int32) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
	if owner != "" {
		d.Labels = map[string]string{"owner": owner}
	}
	return d
}

var kinds = resync.Kinds{
	Owner: corev1.SchemeGroupVersion.WithResource("configmaps"),
	Owned: []resync.Owned{{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), OwnerLabel: "owner"}},
}

type reconciler struct{ ctx context.Context }

func newReconciler(ctx context.Context) controller.Reconciler { return reconciler{ctx} }

func (r reconciler) Reconcile(ctx context.Context, key string) error {
	kc := kubeclient.Get(r.ctx)
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	o, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if o.Data["later"] != "" {
		return controller.NewRequeueAfter(time.Minute)
	}
	replicas, _ := strconv.Atoi(o.Data["replicas"])
	deployments := kc.AppsV1().Deployments(ns)
	d, err := deployments.Get(ctx, o.Data["deployment"], metav1.GetOptions{})
	switch {
	case apierrs.IsNotFound(err):
		_, err = deployments.Create(ctx, owned(ns, o.Data["deployment"], name, int32(replicas)), metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	case d.Labels["owner"] != name:
		return controller.NewPermanentError(fmt.Errorf("deployment %s is not %s's", d.Name, name))
	case *d.Spec.Replicas != int32(replicas):
		d.Spec.Replicas = ptr(int32(replicas))
		_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
		return err
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// requests records what reaches the API server.
type requests struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (r *requests) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	what := req.Method + " " + req.URL.Path
	if sel := req.URL.Query().Get("labelSelector"); sel != "" {
		what += " selector"
	}
	r.seen = append(r.seen, what)
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

func apiServer(t *testing.T, objects ...runtime.Object) (*rest.Config, *requests) {
	t.Helper()
	cfg, err := resynctest.APIServer(scheme.Scheme, objects...)
	if err != nil {
		t.Fatal(err)
	}
	reqs := &requests{next: cfg.Transport}
	cfg.Transport = reqs
	return cfg, reqs
}

func TestKeysNeedingWork(t *testing.T) {
	cfg, reqs := apiServer(t,
		owner("ns", "converged", "a", 1), owned("ns", "a", "converged", 1),
		owner("ns", "drifted", "b", 2), owned("ns", "b", "drifted", 1),
		owner("ns", "missing", "c", 1),
		owner("ns", "refused", "d", 1), owned("ns", "d", "", 1),
		later(owner("ns", "later", "e", 1)),
		// Same names, another namespace: not the owners' of ns.
		owner("other", "converged", "a", 1), owned("other", "a", "converged", 1), owned("other", "c", "missing", 1),
	)
	r, err := resync.New(context.Background(), cfg, kinds, newReconciler)
	if err != nil {
		t.Fatal(err)
	}
	work, refused, err := r.KeysNeedingWork(context.Background())
	if err != nil {
		t.Fatal("KeysNeedingWork() =", err)
	}
	sort := func(keys []types.NamespacedName) []types.NamespacedName {
		slices.SortFunc(keys, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
		return keys
	}
	if diff := cmp.Diff([]types.NamespacedName{{Namespace: "ns", Name: "drifted"}, {Namespace: "ns", Name: "missing"}}, sort(work)); diff != "" {
		t.Error("work (-want, +got):", diff)
	}
	if diff := cmp.Diff([]types.NamespacedName{{Namespace: "ns", Name: "later"}, {Namespace: "ns", Name: "refused"}}, refused); diff != "" {
		t.Error("refused (-want, +got):", diff)
	}
	// The lists, and the reads the lists could not answer: the missing
	// Deployment and the foreign one (not labelled). Nothing was written.
	want := []string{
		"GET /api/v1/configmaps",
		"GET /apis/apps/v1/deployments selector",
		"GET /apis/apps/v1/namespaces/ns/deployments/c",
		"GET /apis/apps/v1/namespaces/ns/deployments/d",
	}
	if diff := cmp.Diff(want, sort2(reqs.seen)); diff != "" {
		t.Error("requests to the API server (-want, +got):", diff)
	}
}

func sort2(s []string) []string { slices.Sort(s); return s }

// A resync of some namespaces (a burst's) lists those only.
func TestKeysNeedingWorkOfSomeNamespaces(t *testing.T) {
	cfg, reqs := apiServer(t,
		owner("a", "missing", "c", 1), owner("b", "drifted", "d", 2), owned("b", "d", "drifted", 1),
		owner("elsewhere", "missing", "c", 1),
	)
	r, err := resync.New(context.Background(), cfg, kinds, newReconciler)
	if err != nil {
		t.Fatal(err)
	}
	work, refused, err := r.KeysNeedingWork(context.Background(), "a", "b")
	if err != nil || len(refused) != 0 {
		t.Fatalf("KeysNeedingWork() = %v, %v, %v; want work only", work, refused, err)
	}
	if diff := cmp.Diff([]types.NamespacedName{{Namespace: "a", Name: "missing"}, {Namespace: "b", Name: "drifted"}}, work); diff != "" {
		t.Error("work (-want, +got):", diff)
	}
	want := []string{
		"GET /api/v1/namespaces/a/configmaps",
		"GET /api/v1/namespaces/b/configmaps",
		"GET /apis/apps/v1/namespaces/a/deployments selector",
		"GET /apis/apps/v1/namespaces/a/deployments/c",
		"GET /apis/apps/v1/namespaces/b/deployments selector",
	}
	if diff := cmp.Diff(want, sort2(reqs.seen)); diff != "" {
		t.Error("requests to the API server (-want, +got):", diff)
	}
}

// At steady state a resync of N owners costs a LIST of owners and one of
// each owned resource per page of owners, and nothing else.
func TestConvergedOwnersCostOnlyLists(t *testing.T) {
	const n = 2*resync.PageSize + 10
	var objects []runtime.Object
	for i := range n {
		name := fmt.Sprintf("o-%04d", i)
		objects = append(objects, owner("ns", name, "d-"+name, 1), owned("ns", "d-"+name, name, 1))
	}
	cfg, reqs := apiServer(t, objects...)
	r, err := resync.New(context.Background(), cfg, kinds, newReconciler)
	if err != nil {
		t.Fatal(err)
	}
	work, refused, err := r.KeysNeedingWork(context.Background())
	if err != nil || len(work)+len(refused) != 0 {
		t.Fatalf("KeysNeedingWork() = %v, %v, %v; want nothing", work, refused, err)
	}
	var want []string
	for range 3 {
		want = append(want, "GET /api/v1/configmaps", "GET /apis/apps/v1/deployments selector")
	}
	if diff := cmp.Diff(want, reqs.seen); diff != "" {
		t.Error("requests to the API server (-want, +got):", diff)
	}
}
