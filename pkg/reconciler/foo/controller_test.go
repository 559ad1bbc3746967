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

package foo

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/uncached"
)

func TestHintsObserve(t *testing.T) {
	h := NewHints(time.Minute)
	foo, _ := json.Marshal(&samplesv1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	dep, _ := json.Marshal(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
	h.Observe(samplesv1alpha1.Kind("Foo"), false, foo)
	h.Observe(appsv1.SchemeGroupVersion.WithKind("Deployment").GroupKind(), true, dep)
	h.Observe(samplesv1alpha1.Kind("Foo"), false, []byte("{garbage"))
	h.Observe(samplesv1alpha1.Kind("Bar"), false, foo)
	if h.Foos.Len() != 1 || h.Deployments.Len() != 1 {
		t.Fatalf("hints: %d Foos, %d Deployments; want 1 and 1", h.Foos.Len(), h.Deployments.Len())
	}
	kc := kubefake.NewSimpleClientset(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}})
	l := uncached.NewDeploymentLister(context.Background(), kc).WithHints(h.Deployments)
	if _, err := l.Deployments("ns").Get("web"); !apierrs.IsNotFound(err) {
		t.Errorf("Get after an observed delete = %v, want NotFound", err)
	}
	// Without stores, Observe does nothing.
	Hints{}.Observe(samplesv1alpha1.Kind("Foo"), false, foo)
}
