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

	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	kubeclient "knative.dev/pkg/client/injection/kube/client"
	"knative.dev/pkg/controller"

	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync/resynctest"
)

// copier is an operator whose owners (here Secrets) each own a ConfigMap
// of their name, labelled "owner", that must hold the owner's "data" key.
type copier struct{ kc kubernetes.Interface }

func (c copier) Reconcile(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	s, err := c.kc.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	want := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"owner": name}},
		Data: map[string]string{"data": s.StringData["data"]}}
	cm, err := c.kc.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrs.IsNotFound(err):
		_, err = c.kc.CoreV1().ConfigMaps(ns).Create(ctx, want, metav1.CreateOptions{})
	case err == nil && cm.Data["data"] != want.Data["data"]:
		_, err = c.kc.CoreV1().ConfigMaps(ns).Update(ctx, want, metav1.UpdateOptions{})
	}
	return err
}

// The resync lists the owners and the objects labelled with their names,
// runs the reconciler over them with its writes refused, and names the
// owners whose reconcile would write.
func ExampleResync() {
	owner := func(name, data string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, StringData: map[string]string{"data": data}}
	}
	owned := func(name, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"owner": name}},
			Data: map[string]string{"data": data}}
	}
	// An API server, in memory, holding these objects.
	cfg, _ := resynctest.APIServer(scheme.Scheme, []runtime.Object{
		owner("converged", "a"), owned("converged", "a"),
		owner("drifted", "b"), owned("drifted", "old"),
		owner("missing", "c"),
	}...)

	r, err := resync.New(context.Background(), cfg, resync.Kinds{
		Owner: corev1.SchemeGroupVersion.WithResource("secrets"),
		Owned: []resync.Owned{{Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), OwnerLabel: "owner"}},
	}, func(ctx context.Context) controller.Reconciler { return copier{kubeclient.Get(ctx)} })
	if err != nil {
		fmt.Println(err)
		return
	}
	work, refused, err := r.KeysNeedingWork(context.Background())
	fmt.Println(work, refused, err)
	// Output: [ns/drifted ns/missing] [] <nil>
}
