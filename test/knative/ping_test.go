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

package knative

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	"github.com/frugal-operator/foo-operator/test/clustertest"
)

// 4. At zero, the PingSource's event (every 5 minutes, config/600-sources.yaml)
// wakes the reconciler, and its resync restores what no event reports: a
// Foo refused a name that a foreign Deployment held gets its Deployment once
// that one is gone (the Deployments source sees only Deployments a Foo owns).
func TestPingWakesAndResyncs(t *testing.T) {
	ctx := context.Background()
	// Nothing else may wake the reconciler: earlier tests' namespaces, and
	// the events their deletion makes, are gone first.
	clustertest.Eventually(t, 3*time.Minute, "earlier tests' namespaces gone", func(ctx context.Context) (bool, string) {
		nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, n := range nss.Items {
			if strings.HasPrefix(n.Name, "knative-e2e-") {
				return false, n.Name + " is " + string(n.Status.Phase)
			}
		}
		return true, ""
	})
	ns := namespace(t)
	theirs := resources.MakeDeployment(newFoo(ns, "x", "taken", 0))
	theirs.OwnerReferences = nil
	if _, err := kube.AppsV1().Deployments(ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createFoo(t, newFoo(ns, "late", "taken", 1))
	clustertest.Eventually(t, 2*time.Minute, "the Foo is refused the name", func(ctx context.Context) (bool, string) {
		f, err := foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "late", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return f.Status.ObservedGeneration == f.Generation && !f.Status.IsReady(), fmt.Sprintf("%+v", f.Status)
	})
	if err := kube.AppsV1().Deployments(ns).Delete(ctx, "taken", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	atZero(t, service)

	zero := time.Now().Truncate(time.Second)

	// The next pod is the ping's: it starts at a 5-minute mark.
	var woke time.Time
	clustertest.Eventually(t, 6*time.Minute, "a new reconciler pod", func(ctx context.Context) (bool, string) {
		pods, err := kube.CoreV1().Pods(system).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=" + service})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if !p.CreationTimestamp.Before(&metav1.Time{Time: zero}) {
				woke = p.CreationTimestamp.Time
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pods, none since %v", len(pods.Items), zero)
	})
	if since := woke.Sub(woke.Truncate(5 * time.Minute)); since > 30*time.Second {
		t.Errorf("the reconciler woke at %v, %v after a ping's 5-minute mark: not woken by the ping", woke, since)
	}
	clustertest.Eventually(t, 2*time.Minute, "the Foo's own Deployment", func(ctx context.Context) (bool, string) {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, "taken", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(d.OwnerReferences) == 1 && d.OwnerReferences[0].Name == "late", fmt.Sprintf("owners %v", d.OwnerReferences)
	})
	available(t, ns, "late", 1)
}
