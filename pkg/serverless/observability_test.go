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

package serverless

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseObservabilityConfig(t *testing.T) {
	tests := []struct {
		name    string
		data    map[string]string
		want    ObservabilityConfig
		wantErr bool
	}{
		{name: "none by default", want: ObservabilityConfig{Protocol: "none"}},
		{name: "OTLP over HTTP", data: map[string]string{"metrics-protocol": "http/protobuf",
			"metrics-endpoint": "http://collector:4318/v1/metrics", "metrics-export-interval": "10s"},
			want: ObservabilityConfig{Protocol: "http/protobuf", Endpoint: "http://collector:4318/v1/metrics", ExportInterval: 10 * time.Second}},
		{name: "Knative's example keys are ignored", data: map[string]string{"_example": "metrics-protocol: grpc"}, want: ObservabilityConfig{Protocol: "none"}},
		{name: "no endpoint", data: map[string]string{"metrics-protocol": "http/protobuf"}, wantErr: true},
		{name: "an endpoint for none", data: map[string]string{"metrics-endpoint": "http://x"}, wantErr: true},
		{name: "prometheus cannot scrape a pod at zero", data: map[string]string{"metrics-protocol": "prometheus"}, wantErr: true},
		{name: "grpc", data: map[string]string{"metrics-protocol": "grpc", "metrics-endpoint": "http://x:4317"}, wantErr: true},
		{name: "bad interval", data: map[string]string{"metrics-export-interval": "often"}, wantErr: true},
		{name: "profiling", data: map[string]string{"runtime-profiling": "enabled"}, want: ObservabilityConfig{Protocol: "none", Profiling: true}},
		{name: "profiling off", data: map[string]string{"runtime-profiling": "disabled"}, want: ObservabilityConfig{Protocol: "none"}},
		{name: "bad profiling", data: map[string]string{"runtime-profiling": "yes"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseObservabilityConfig(tc.data)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseObservabilityConfig() = %v, want an error: %v", err, tc.wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Error("config (-want, +got):", diff)
				}
			}
		})
	}
}
