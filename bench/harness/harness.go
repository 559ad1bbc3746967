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

// Package harness measures this project's reconciler side by side with the
// classic informer-based k8s.io/sample-controller (built with a raised
// client rate limit), on the same loopback API server in the same run, so that the ratios hold on a noisy machine. hack/bench.sh runs it
// (bench/loopback) and writes the results; its test runs a small smoke of it.
package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

// The controllers measured.
const (
	Ours          = "frugal (this project)"
	OursQueued    = "frugal, ack on enqueue"
	ClassicRaised = "classic, raised QPS"
	Adapters      = "ApiServerSource adapter"
)

// Config says what to measure.
type Config struct {
	// Ns are the numbers of pre-existing Foos (each controller's own, each
	// with its Deployment), plus as many unrelated Deployments.
	Ns []int
	// Burst is how many Foos are created at once.
	Burst int
	// RaisedQPS is the raised classic's client rate limit (burst twice it).
	RaisedQPS int
	// Idle is the window over which idle CPU is measured.
	Idle time.Duration
	// Dir keeps each run's control plane and logs.
	Dir string
	// SenderAuth runs ours with sender authentication on, as eventing's
	// authentication-oidc sets it up: the adapters send tokens of their
	// OIDC identities, and the reconciler admits only those (and the
	// ping's). Then the adds of new Foos stand in for reads (docs/trust-model.md).
	SenderAuth bool
	// Log tells progress.
	Log func(format string, args ...any)
}

// Result is one controller's figures at one N.
type Result struct {
	Controller string
	N          int
	Burst      int
	// ReadyMs: process start to ready. FirstFooMs: process start to the
	// first new Foo reconciled (ready, then the Foo's Deployment and status
	// written).
	ReadyMs, FirstFooMs float64
	// SteadyRSS after the burst and the idle window; PeakRSS the high-water mark.
	SteadyRSSMiB, PeakRSSMiB float64
	// AnonRSSMiB is the anonymous part of SteadyRSS; the rest is file-backed
	// (the binary's pages), which the kernel can reclaim.
	AnonRSSMiB float64
	// BurstSeconds: first create to every Deployment and status written.
	BurstSeconds, P50Ms, P99Ms float64
	// UpdateSeconds: then every Foo of the burst given another replica
	// count at once (an update burst), first update to every Deployment
	// at that count and, ours, every Foo's status at its new generation
	// (the classic's status tells no generation).
	UpdateSeconds float64
	// Requests per Foo of the burst, by "VERB resource", the harness's own
	// creates taken out.
	Requests                  map[string]float64
	WritesPerFoo, ReadsPerFoo float64
	IdleCPUSeconds            float64
	// DrainMs: ours, from SIGTERM (as Knative scales to zero) until it exited.
	DrainMs float64
	// Resync: the ping's resync at steady state (N converged Foos): the
	// requests it made, by "VERB resource", and the time to its answer.
	Resync   map[string]float64
	ResyncMs float64
	// BurstCPU: the CPU seconds each process used during the burst (the
	// API server, etcd, the controller, the adapters, the harness that
	// creates and watches), and "machine idle": what all cores left unused.
	BurstCPU   map[string]float64 `json:",omitempty"`
	Incomplete string
}

// Report is a whole run.
type Report struct {
	When   time.Time
	Config Config `json:"-"`
	Ns     []int
	Burst  int
	Idle   string
	Cores  int
	// SenderAuth: ours ran with sender authentication on (Config.SenderAuth).
	SenderAuth bool
	Results    []Result
}

// Run measures every controller at every N, each N on a control plane of
// its own.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	rep := &Report{When: time.Now(), Config: cfg, Ns: cfg.Ns, Burst: cfg.Burst, Idle: cfg.Idle.String(), Cores: runtime.NumCPU(), SenderAuth: cfg.SenderAuth}
	for _, n := range cfg.Ns {
		rs, err := runN(ctx, cfg, n)
		rep.Results = append(rep.Results, rs...)
		if err != nil {
			return rep, fmt.Errorf("N=%d: %w", n, err)
		}
	}
	return rep, nil
}

// runN measures, in turn, the raised classic and ours in both ack modes,
// with the adapters' own cost.
func runN(ctx context.Context, cfg Config, n int) ([]Result, error) {
	r, err := setUp(ctx, cfg, n)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.cp.Stop() }()
	qps := strconv.Itoa(cfg.RaisedQPS)
	res, err := r.measureClassic(ctx, ClassicRaised, "sample-controller-raised",
		[]string{"--kube-api-qps", qps, "--kube-api-burst", strconv.Itoa(2 * cfg.RaisedQPS)})
	out := []Result{res}
	if err != nil {
		return out, err
	}
	res, ad, err := r.measureOurs(ctx, true, Ours)
	out = append(out, res, ad)
	if err != nil {
		return out, err
	}
	res, _, err = r.measureOurs(ctx, false, OursQueued, "--ack=queued")
	return append(out, res), err
}

// WriteJSON writes the report as JSON.
func (rep *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
