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

package harness

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The requests counted are the API server's by verb and resource, of every
// code and component, and nothing else.
func TestParseRequests(t *testing.T) {
	metrics := `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="409",component="apiserver",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",resource="foos",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 2.5
apiserver_request_total{code="200",component="apiserver",resource="",scope="",subresource="",verb="GET",version=""} 7
apiserver_request_duration_seconds_count{resource="foos",subresource="",verb="LIST"} 9
`
	want := map[string]float64{"POST deployments": 4, "PUT foos/status": 2.5}
	if diff := cmp.Diff(want, parseRequests(metrics)); diff != "" {
		t.Errorf("parseRequests (-want, +got):\n%s", diff)
	}
	if !isWrite("PUT foos/status") || isWrite("LIST foos") {
		t.Error("isWrite: PUT is a write, LIST is not")
	}
}
