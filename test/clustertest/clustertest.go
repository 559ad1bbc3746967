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
