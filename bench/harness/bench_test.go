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
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs the whole harness small: every controller must reconcile
// its burst and every figure must be there. hack/bench.sh runs it in full.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{
		Ns: []int{20}, Burst: 20, RaisedQPS: 200,
		Idle: 2 * time.Second, Dir: t.TempDir(), Log: t.Logf, SenderAuth: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ClassicRaised, Ours, OursQueued} {
		r := rep.find(name, 20)
		if r == nil {
			t.Fatalf("no result for %s", name)
		}
		if r.Incomplete != "" || r.BurstSeconds <= 0 || r.UpdateSeconds <= 0 || r.ReadyMs <= 0 || r.FirstFooMs < r.ReadyMs || r.SteadyRSSMiB <= 0 || r.WritesPerFoo <= 0 {
			t.Errorf("%s: implausible figures: %+v", name, r)
		}
		// The API server served the burst's requests, the harness made them
		// (read, but maybe under one clock tick, 10 ms, for 10 Foos).
		if _, read := r.BurstCPU["harness"]; r.BurstCPU["kube-apiserver"] <= 0 || !read {
			t.Errorf("%s: burst CPU %v, want the API server's and the harness's", name, r.BurstCPU)
		}
	}
	// With sender authentication on, the adds of the burst's new Foos stood
	// in for reads: no GET of a Foo.
	if r := rep.find(Ours, 20); r != nil && r.Requests["GET foos"] != 0 {
		t.Errorf("%s: %.2f GETs of Foos per Foo of the burst, want none: %v", Ours, r.Requests["GET foos"], r.Requests)
	}
	// The adapters delivered our burst, and were measured at rest.
	if got := rep.find(Ours, 20).BurstCPU["adapters"]; got <= 0 {
		t.Errorf("ours: the adapters used %.2f CPU s in the burst, want some", got)
	}
	if ad := rep.find(Adapters, 20); ad == nil || ad.SteadyRSSMiB <= 0 {
		t.Errorf("the adapters' memory was not measured: %+v", ad)
	}
	ours := rep.find(Ours, 20)
	if ours.DrainMs <= 0 {
		t.Errorf("ours: %+v", ours)
	}
	if ours.Requests["POST deployments"] < 0.99 {
		t.Errorf("ours created %.2f deployments per Foo, want 1: %v", ours.Requests["POST deployments"], ours.Requests)
	}
	// With every Foo converged, the resync lists (one page each) and writes nothing.
	if ours.Resync["LIST foos"] != 1 || ours.Resync["LIST deployments"] != 1 || len(ours.Resync) != 2 {
		t.Errorf("the ping resync made %v, want one LIST of Foos and one of Deployments", ours.Resync)
	}
	var md bytes.Buffer
	rep.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "| 20 | "+Ours) {
		t.Errorf("markdown lacks our row:\n%s", md.String())
	}
	t.Log("\n" + md.String())
}
