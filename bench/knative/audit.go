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
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/onenode"
)

// auditLog is the cluster's audit log: every request of the ServiceAccounts
// of foo-operator, bar-operator and operator-stream (hack/cluster/up.sh).
var auditLog = onenode.AuditLog("")

// reconcilerUser is the Foo reconciler's identity.
const reconcilerUser = "system:serviceaccount:" + fooSystem + ":foo-reconciler"

// auditTable is a user's requests by second from a start, by verb and
// resource[/subresource].
type auditTable struct {
	User     string `json:"user"`
	Requests int    `json:"requests"`
	// Columns are the kinds of request, the most frequent first.
	Columns []string `json:"columns"`
	// Rows are the seconds with a request, in order.
	Rows []auditRow `json:"rows"`
}

// auditRow is one second's requests, counted by column.
type auditRow struct {
	Second int   `json:"second"`
	Counts []int `json:"counts"`
}

// requestKey names a request as "verb resource[/subresource]".
func requestKey(e *controlplane.AuditEvent) string {
	res := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		res += "/" + e.ObjectRef.Subresource
	}
	return e.Verb + " " + res
}

// breakdown bins the requests by second from start (when each was received).
func breakdown(entries []controlplane.AuditEvent, start time.Time) *auditTable {
	t := &auditTable{User: reconcilerUser, Requests: len(entries)}
	totals := map[string]int{}
	bySecond := map[int]map[string]int{}
	for _, e := range entries {
		s := int(math.Floor(e.Received.Sub(start).Seconds()))
		k := requestKey(&e)
		totals[k]++
		if bySecond[s] == nil {
			bySecond[s] = map[string]int{}
		}
		bySecond[s][k]++
	}
	for k := range totals {
		t.Columns = append(t.Columns, k)
	}
	slices.SortFunc(t.Columns, func(a, b string) int {
		if totals[a] != totals[b] {
			return totals[b] - totals[a]
		}
		return strings.Compare(a, b)
	})
	var seconds []int
	for s := range bySecond {
		seconds = append(seconds, s)
	}
	slices.Sort(seconds)
	for _, s := range seconds {
		row := auditRow{Second: s}
		for _, k := range t.Columns {
			row.Counts = append(row.Counts, bySecond[s][k])
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// markdown is the table, the seconds with no request collapsed.
func (t *auditTable) markdown() string {
	if t == nil || t.Requests == 0 {
		return "No request of " + reconcilerUser + " in the audit log.\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| s | %s | all |\n|---:|%s---:|\n", strings.Join(t.Columns, " | "), strings.Repeat("---:|", len(t.Columns)))
	empty := strings.Repeat(" |", len(t.Columns)+1)
	gap := func(n int) {
		if n > 0 {
			fmt.Fprintf(&b, "| … %d s with no request … |%s\n", n, empty)
		}
	}
	next := 0
	totals := make([]int, len(t.Columns))
	for _, r := range t.Rows {
		gap(r.Second - next)
		next = r.Second + 1
		all := 0
		cells := make([]string, len(r.Counts))
		for i, c := range r.Counts {
			all += c
			totals[i] += c
			if c > 0 {
				cells[i] = fmt.Sprint(c)
			}
		}
		fmt.Fprintf(&b, "| %d | %s | %d |\n", r.Second, strings.Join(cells, " | "), all)
	}
	cells := make([]string, len(totals))
	for i, c := range totals {
		cells[i] = fmt.Sprint(c)
	}
	fmt.Fprintf(&b, "| all | %s | %d |\n", strings.Join(cells, " | "), t.Requests)
	return b.String()
}
