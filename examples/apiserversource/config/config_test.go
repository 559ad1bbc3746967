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
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/frugal-operator/foo-operator/examples/apiserversource/pkg/reconciler/apiserversource"
	"github.com/frugal-operator/foo-operator/pkg/serverless"
	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
)

// TestTheSourcesSendWhatTheOperatorNames checks 600-sources.yaml's one
// fail-fast ApiServerSource against apiserversource.Operator's kinds.
func TestTheSourcesSendWhatTheOperatorNames(t *testing.T) {
	if err := serverlesstest.CheckSourcesFile(apiserversource.Operator, "600-sources.yaml"); err != nil {
		t.Error(err)
	}
}

// The ConfigMaps the reconciler follows carry the label its source selects
// them by: one without it would be read only when a pod starts.
func TestTheConfigMapsAreLabelledForTheReconciler(t *testing.T) {
	for _, f := range []string{"400-config-features.yaml", "400-config-observability.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cm corev1.ConfigMap
		if err := yaml.UnmarshalStrict(b, &cm); err != nil {
			t.Fatal(f, err)
		}
		if got := cm.Labels[serverless.ConfigLabel]; got != apiserversource.Operator.Name {
			t.Errorf("%s: label %s = %q, want %q", f, serverless.ConfigLabel, got, apiserversource.Operator.Name)
		}
	}
}
