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

// Package clustertest holds what every test against a cluster needs, the
// loopback control plane's or the one-node Knative cluster's: a namespace of
// its own, and polling until a condition holds.
package clustertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Interval is how often Poll asks.
const Interval = 50 * time.Millisecond

// Poll asks cond every Interval until it holds, for up to within, and
// returns an error with what cond last said if it never did.
func Poll(within time.Duration, what string, cond func(ctx context.Context) (bool, string)) error {
	last := ""
	if err := wait.PollUntilContextTimeout(context.Background(), Interval, within, true,
		func(ctx context.Context) (bool, error) {
			ok, msg := cond(ctx)
			last = msg
			return ok, nil
		}); err != nil {
		return fmt.Errorf("%s: not within %v; last: %s", what, within, last)
	}
	return nil
}

// Eventually is Poll that fails t.
func Eventually(t testing.TB, within time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	if err := Poll(within, what, cond); err != nil {
		t.Fatal(err)
	}
}

// Namespace makes a namespace for t, named prefix and a random suffix, and
// deletes it when t ends.
func Namespace(t testing.TB, kube kubernetes.Interface, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// NoRoomFor makes a ResourceQuota in ns that allows no object of resource
// (a quota resource name, such as count/deployments.apps), and waits until
// the API server refuses one to probe (a dry run that makes one). It writes the quota's status too, as
// kube-controller-manager's quota controller would: admission enforces the
// status's limits, and the loopback control plane runs no quota controller.
// The returned func lifts the quota.
func NoRoomFor(t testing.TB, kube kubernetes.Interface, ns string, resource corev1.ResourceName, probe func(ctx context.Context) error) func() {
	t.Helper()
	ctx := context.Background()
	quotas := kube.CoreV1().ResourceQuotas(ns)
	none := corev1.ResourceList{resource: apiresource.MustParse("0")}
	q, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-room"}, Spec: corev1.ResourceQuotaSpec{Hard: none}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: none, Used: none}
	if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's quota informer may lag: probe until it refuses.
	Eventually(t, time.Minute, "the quota in force", func(ctx context.Context) (bool, string) {
		err := probe(ctx)
		return apierrs.IsForbidden(err), fmt.Sprint("not refused: ", err)
	})
	return func() {
		t.Helper()
		if err := quotas.Delete(ctx, q.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// ReconcileFailed tells whether a reconcile of object ns/name failed:
// Knative's generated reconcilers record a Warning event, InternalError, for
// each failure neither permanent nor a requeue.
func ReconcileFailed(ctx context.Context, kube kubernetes.Interface, ns, name string) (bool, string) {
	events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=InternalError"})
	if err != nil {
		return false, err.Error()
	}
	return len(events.Items) > 0, "no InternalError event"
}
