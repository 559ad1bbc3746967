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
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// The kept runs' results.md are what write makes of their results.json:
// the same headings, tables' columns and rows' labels, in the same order.
func TestWriteKeepsTheRunsResults(t *testing.T) {
	runs, _ := filepath.Glob("../results/*-knative")
	if len(runs) == 0 {
		t.Fatal("no run of bench/knative in bench/results")
	}
	for _, run := range runs {
		var r results
		js, err := os.ReadFile(filepath.Join(run, "results.json"))
		if err == nil {
			err = json.Unmarshal(js, &r)
		}
		kept, err2 := os.ReadFile(filepath.Join(run, "results.md"))
		if err != nil || err2 != nil {
			t.Fatalf("%s: %v, %v", run, err, err2)
		}
		if diff := cmp.Diff(skeleton(string(kept)), skeleton(r.markdown())); diff != "" {
			t.Errorf("%s: results.md (-kept, +made):\n%s", run, diff)
		}
	}
}

// skeleton is a results.md's headings, its tables' header and delimiter
// rows, and the first cell of every other row.
func skeleton(md string) []string {
	var out []string
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "#"), strings.HasPrefix(l, "|---"), strings.HasPrefix(l, "|") && strings.HasPrefix(lines[i+1], "|---"):
			out = append(out, l)
		case strings.HasPrefix(l, "|"):
			out = append(out, strings.SplitN(l, "|", 3)[1])
		}
	}
	return out
}

// breakdown bins the requests by the second they were received in, the
// most frequent kind first.
func TestBreakdown(t *testing.T) {
	start := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	var requests []controlplane.AuditEvent
	for _, q := range []string{
		`"verb":"get","objectRef":{"resource":"foos"},"requestReceivedTimestamp":"2026-12-03T10:00:00.100000Z"`,
		`"verb":"update","objectRef":{"resource":"foos","subresource":"status"},"requestReceivedTimestamp":"2026-12-03T10:00:00.900000Z"`,
		`"verb":"update","objectRef":{"resource":"foos","subresource":"status"},"requestReceivedTimestamp":"2026-12-03T10:00:05.200000Z"`,
	} {
		var e controlplane.AuditEvent
		if err := json.Unmarshal([]byte("{"+q+"}"), &e); err != nil {
			t.Fatal(err)
		}
		requests = append(requests, e)
	}
	want := &auditTable{Requests: 3, Columns: []string{"update foos/status", "get foos"}, Rows: []auditRow{{0, []int{1, 1}}, {5, []int{1, 0}}}}
	if diff := cmp.Diff(want, breakdown(requests, start)); diff != "" {
		t.Errorf("breakdown (-want, +got):\n%s", diff)
	}
}
