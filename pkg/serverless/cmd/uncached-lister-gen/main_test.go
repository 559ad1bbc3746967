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

package main

import (
	"strings"
	"testing"
)

func TestFindReadsTheGeneratedLister(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want lister
	}{{
		arg: "k8s.io/client-go/listers/apps/v1.Deployment",
		want: lister{Kind: "Deployment", Plural: "Deployments",
			ListersPkg: "k8s.io/client-go/listers/apps/v1", TypesPkg: "k8s.io/api/apps/v1"},
	}, {
		arg:  "k8s.io/client-go/listers/core/v1.Namespace", // cluster-scoped
		want: lister{Kind: "Namespace", ListersPkg: "k8s.io/client-go/listers/core/v1", TypesPkg: "k8s.io/api/core/v1"},
	}, {
		arg: "knative.dev/eventing/pkg/client/listers/sources/v1.ApiServerSource", // an aliased import
		want: lister{Kind: "ApiServerSource", Plural: "ApiServerSources",
			ListersPkg: "knative.dev/eventing/pkg/client/listers/sources/v1", TypesPkg: "knative.dev/eventing/pkg/apis/sources/v1"},
	}} {
		got, err := find(tc.arg)
		if err != nil || got != tc.want {
			t.Errorf("find(%s) = %+v, %v; want %+v", tc.arg, got, err, tc.want)
		}
	}
}

func TestFindRefusesWhatItCannotAnswer(t *testing.T) {
	for arg, want := range map[string]string{
		"Deployment":                                  "want LISTERS-PACKAGE.Kind",
		"k8s.io/client-go/listers/apps/v1.Nope":       "has no NopeLister",
		"k8s.io/client-go/listers/apps/v1.ReplicaSet": "ReplicaSetListerExpansion has methods",
		"k8s.io/client-go/listers/nothing/v1.Thing":   "go list k8s.io/client-go/listers/nothing/v1",
	} {
		if _, err := find(arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("find(%s) = %v, want an error with %q", arg, err, want)
		}
	}
}

func TestGenerateNamesEachPackageOnce(t *testing.T) {
	src, err := generate("x", []byte("// header\n"), []lister{
		{Kind: "Deployment", Plural: "Deployments", ListersPkg: "k8s.io/client-go/listers/apps/v1", TypesPkg: "k8s.io/api/apps/v1"},
		{Kind: "DaemonSet", Plural: "DaemonSets", ListersPkg: "k8s.io/client-go/listers/apps/v1", TypesPkg: "k8s.io/api/apps/v1"},
		{Kind: "Thing", Plural: "Things", ListersPkg: "example.com/b/listers/apps/v1", TypesPkg: "example.com/b/apis/apps/v1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// header\n",
		`appsv1 "k8s.io/api/apps/v1"`,
		`appsv1listers "k8s.io/client-go/listers/apps/v1"`,
		`appsv12 "example.com/b/apis/apps/v1"`,
		`appsv1listers2 "example.com/b/listers/apps/v1"`,
		"func (l thingLister) Things(namespace string) appsv1listers2.ThingNamespaceLister",
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("the generated file has no %q:\n%s", want, src)
		}
	}
	if strings.Count(string(src), `"k8s.io/api/apps/v1"`) != 1 {
		t.Errorf("k8s.io/api/apps/v1 imported more than once:\n%s", src)
	}
	_, err = generate("x", nil, []lister{{Kind: "Thing", TypesPkg: "a/v1"}, {Kind: "Thing", TypesPkg: "b/v1"}})
	if err == nil || !strings.Contains(err.Error(), "two listers of kind Thing") {
		t.Errorf("generate of two kinds named alike = %v, want an error", err)
	}
}
