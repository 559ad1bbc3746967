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

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubefake "k8s.io/client-go/kubernetes/fake"
	appsv1listers "k8s.io/client-go/listers/apps/v1"
)

// deploymentLister is the generated DeploymentLister on a Lister: what each
// kind takes.
type deploymentLister struct {
	Lister[*appsv1.Deployment, *appsv1.DeploymentList]
}

func (l deploymentLister) Deployments(ns string) appsv1listers.DeploymentNamespaceLister {
	return l.In(ns)
}

var _ appsv1listers.DeploymentLister = deploymentLister{}

func deployment(ns, name string, l map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}}
}

func names(objs []*appsv1.Deployment) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Namespace+"/"+o.Name)
	}
	return out
}

func TestLister(t *testing.T) {
	kc := kubefake.NewSimpleClientset(
		deployment("a", "web", map[string]string{"app": "nginx"}),
		deployment("a", "db", nil),
		deployment("b", "web", map[string]string{"app": "nginx"}),
	)
	l := deploymentLister{New(context.Background(), func(ns string) Client[*appsv1.Deployment, *appsv1.DeploymentList] {
		return kc.AppsV1().Deployments(ns)
	})}

	if got, err := l.Deployments("b").Get("web"); err != nil || got.Namespace != "b" || got.Name != "web" {
		t.Fatalf("Get(b/web) = %v, %v", got, err)
	}
	if _, err := l.Deployments("b").Get("db"); !apierrs.IsNotFound(err) {
		t.Errorf("Get(b/db) = %v, want NotFound", err)
	}

	tests := []struct {
		name string
		list func() ([]*appsv1.Deployment, error)
		want []string
	}{
		{"all namespaces", func() ([]*appsv1.Deployment, error) { return l.List(labels.Everything()) }, []string{"a/db", "a/web", "b/web"}},
		{"nil selector", func() ([]*appsv1.Deployment, error) { return l.List(nil) }, []string{"a/db", "a/web", "b/web"}},
		{"one namespace", func() ([]*appsv1.Deployment, error) { return l.Deployments("a").List(labels.Everything()) }, []string{"a/db", "a/web"}},
		{"by selector", func() ([]*appsv1.Deployment, error) {
			return l.List(labels.SelectorFromSet(labels.Set{"app": "nginx"}))
		}, []string{"a/web", "b/web"}},
		{"none", func() ([]*appsv1.Deployment, error) { return l.Deployments("c").List(labels.Everything()) }, []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.list()
			if err != nil {
				t.Fatal("List() =", err)
			}
			if diff := cmp.Diff(tc.want, names(got)); diff != "" {
				t.Error("List (-want, +got):", diff)
			}
		})
	}
}
