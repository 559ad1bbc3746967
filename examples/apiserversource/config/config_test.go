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

// Package config holds the example's manifests; its test checks the sources
// against apiserversource.Operator.
package config

import (
	"testing"

	"github.com/frugal-operator/foo-operator/examples/apiserversource/pkg/reconciler/apiserversource"
	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
)

// TestTheSourcesSendWhatTheOperatorNames checks 600-sources.yaml's
// ApiServerSource against apiserversource.Operator's kinds.
func TestTheSourcesSendWhatTheOperatorNames(t *testing.T) {
	sources, err := serverlesstest.SourcesIn("600-sources.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) != 1 {
		t.Errorf("%d ApiServerSources, want 1: each is an always-on adapter pod", len(sources))
	}
	if err := serverlesstest.CheckSources(apiserversource.Operator, sources...); err != nil {
		t.Error(err)
	}
	for _, s := range sources {
		if s.Annotations["features.knative.dev/apiserversource-skip-permissions-check"] != "true" {
			t.Errorf("ApiServerSource %s is not in fail-fast mode: after an API server's restart it would relist and send nothing for what changed", s.Name)
		}
	}
}
