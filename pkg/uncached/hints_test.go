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

package uncached

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	foofake "github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned/fake"
)

func TestFooListerHints(t *testing.T) {
	stored := &samplesv1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "5"},
		Spec: samplesv1alpha1.FooSpec{DeploymentName: "stored"}}
	client := foofake.NewSimpleClientset(stored)
	hints := NewHints[*samplesv1alpha1.Foo](time.Minute)
	l := NewFooLister(context.Background(), client).WithHints(hints).Foos("ns")
	event := stored.DeepCopy()
	event.ResourceVersion, event.Spec.DeploymentName = "7", "from-event"
	hints.Put(event, false)

	get := func() string {
		t.Helper()
		f, err := l.Get("a")
		if err != nil {
			t.Fatal(err)
		}
		return f.Spec.DeploymentName
	}
	if got := get(); got != "from-event" || len(client.Actions()) != 0 {
		t.Errorf("first Get = %q after %d requests, want the event's object and none", got, len(client.Actions()))
	}
	if got := get(); got != "stored" || len(client.Actions()) != 1 {
		t.Errorf("second Get = %q after %d requests, want the API server's (a hint is used once)", got, len(client.Actions()))
	}

	// An older version than the one held is dropped.
	hints.Put(event, false)
	older := stored.DeepCopy()
	older.ResourceVersion, older.Spec.DeploymentName = "6", "older"
	hints.Put(older, false)
	if got := get(); got != "from-event" {
		t.Errorf("Get = %q, want the newer hint", got)
	}

	// A hint past its age is not used.
	hints.Put(event, false)
	hints.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if got := get(); got != "stored" || hints.Len() != 0 {
		t.Errorf("Get = %q (%d hints left), want the API server's and the stale hint gone", got, hints.Len())
	}
}

func TestDeploymentListerHintsDeletion(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "3"}}
	client := kubefake.NewSimpleClientset(d)
	hints := NewHints[*appsv1.Deployment](time.Minute)
	l := NewDeploymentLister(context.Background(), client).WithHints(hints)
	hints.Put(d, true)
	if _, err := l.Deployments("ns").Get("web"); !apierrs.IsNotFound(err) || len(client.Actions()) != 0 {
		t.Errorf("Get after a delete event = %v after %d requests, want NotFound and none", err, len(client.Actions()))
	}
	if _, err := l.Deployments("ns").Get("web"); err != nil {
		t.Errorf("Get without a hint = %v, want the API server's copy", err)
	}
	// A nil store is no store.
	if _, err := NewDeploymentLister(context.Background(), client).Deployments("ns").Get("web"); err != nil {
		t.Error(err)
	}
}
