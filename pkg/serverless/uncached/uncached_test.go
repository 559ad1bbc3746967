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
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	foofake "github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned/fake"
)

func meta(ns, name string, l map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: l}
}

func names[T interface {
	GetNamespace() string
	GetName() string
}](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

func TestFooLister(t *testing.T) {
	ctx := context.Background()
	client := foofake.NewSimpleClientset(
		&samplesv1alpha1.Foo{ObjectMeta: meta("a", "one", map[string]string{"tier": "web"})},
		&samplesv1alpha1.Foo{ObjectMeta: meta("a", "two", nil)},
		&samplesv1alpha1.Foo{ObjectMeta: meta("b", "three", map[string]string{"tier": "web"})},
	)
	l := NewFooLister(ctx, client)

	got, err := l.Foos("a").Get("one")
	if err != nil || got.Name != "one" {
		t.Fatalf("Get(one) = %v, %v", got, err)
	}
	if _, err := l.Foos("a").Get("three"); !apierrs.IsNotFound(err) {
		t.Errorf("Get(three) in a = %v, want NotFound", err)
	}

	tests := []struct {
		name string
		list func() ([]*samplesv1alpha1.Foo, error)
		want []string
	}{
		{"all namespaces", func() ([]*samplesv1alpha1.Foo, error) { return l.List(labels.Everything()) }, []string{"a/one", "a/two", "b/three"}},
		{"nil selector", func() ([]*samplesv1alpha1.Foo, error) { return l.List(nil) }, []string{"a/one", "a/two", "b/three"}},
		{"one namespace", func() ([]*samplesv1alpha1.Foo, error) { return l.Foos("a").List(labels.Everything()) }, []string{"a/one", "a/two"}},
		{"by selector", func() ([]*samplesv1alpha1.Foo, error) {
			return l.List(labels.SelectorFromSet(labels.Set{"tier": "web"}))
		}, []string{"a/one", "b/three"}},
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

func TestDeploymentLister(t *testing.T) {
	ctx := context.Background()
	objs := []runtime.Object{
		&appsv1.Deployment{ObjectMeta: meta("a", "web", map[string]string{"app": "nginx"})},
		&appsv1.Deployment{ObjectMeta: meta("a", "db", nil)},
		&appsv1.Deployment{ObjectMeta: meta("b", "web", map[string]string{"app": "nginx"})},
	}
	l := NewDeploymentLister(ctx, kubefake.NewSimpleClientset(objs...))

	if got, err := l.Deployments("b").Get("web"); err != nil || got.Namespace != "b" {
		t.Fatalf("Get(b/web) = %v, %v", got, err)
	}
	if _, err := l.Deployments("b").Get("db"); !apierrs.IsNotFound(err) {
		t.Errorf("Get(b/db) = %v, want NotFound", err)
	}
	got, err := l.List(labels.SelectorFromSet(labels.Set{"app": "nginx"}))
	if err != nil {
		t.Fatal("List() =", err)
	}
	if diff := cmp.Diff([]string{"a/web", "b/web"}, names(got)); diff != "" {
		t.Error("List (-want, +got):", diff)
	}
	got, err = l.Deployments("a").List(labels.Everything())
	if err != nil {
		t.Fatal("List() =", err)
	}
	if diff := cmp.Diff([]string{"a/db", "a/web"}, names(got)); diff != "" {
		t.Error("List in a (-want, +got):", diff)
	}
}
