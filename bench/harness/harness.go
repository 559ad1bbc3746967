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

// Package harness measures this project's reconciler beside the classic
// informer-based k8s.io/sample-controller on one loopback API server, in one
// run, so that their ratios hold on a noisy machine. Each N has a control
// plane of its own with config/ applied, N Foos of each side and N unrelated
// Deployments, and the Foo operator's ApiServerSource adapter as a process;
// the controllers are measured one after the other, in the order of
// controllers (bench/README.md says what). bench/loopback runs it.
package harness

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// The rows of results.md.
const (
	Ours          = "frugal (this project)"
	OursQueued    = "frugal, ack on enqueue"
	ClassicRaised = "classic, raised QPS"
	Adapters      = "ApiServerSource adapter"
)

// Config says what to measure.
type Config struct {
	Ns         []int         // pre-existing Foos of each side, and as many unrelated Deployments
	Burst      int           // Foos created at once
	RaisedQPS  int           // every controller's client QPS (burst twice it)
	Idle       time.Duration // the window of idle CPU
	Dir        string        // each N's control plane and logs
	SenderAuth bool          // ours admits only the adapter's and the ping's OIDC tokens (docs/trust-model.md)
	Log        func(format string, args ...any)
}

// Result is one controller's figures at one N; requests are by "VERB resource".
type Result struct {
	Controller                                string
	N, Burst                                  int
	ReadyMs, FirstFooMs                       float64 // from the process's start
	SteadyRSSMiB, PeakRSSMiB, AnonRSSMiB      float64
	BurstSeconds, P50Ms, P99Ms, UpdateSeconds float64
	Requests                                  map[string]float64 // per Foo of the burst, the harness's creates left out
	WritesPerFoo, ReadsPerFoo, IdleCPUSeconds float64
	Resync                                    map[string]float64 // the ping's
	ResyncMs                                  float64
	Incomplete                                string
}

// Report is a whole run.
type Report struct {
	When       time.Time
	Ns         []int
	Burst      int
	Idle       string
	SenderAuth bool
	Results    []Result
}

// Run measures every controller at every N.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	rep := &Report{When: time.Now(), Ns: cfg.Ns, Burst: cfg.Burst, Idle: cfg.Idle.String(), SenderAuth: cfg.SenderAuth}
	for _, n := range cfg.Ns {
		rs, err := runN(ctx, cfg, n)
		if rep.Results = append(rep.Results, rs...); err != nil {
			return rep, fmt.Errorf("N=%d: %w", n, err)
		}
	}
	return rep, nil
}

// runN measures every controller on a control plane of N's own.
func runN(ctx context.Context, cfg Config, n int) (out []Result, err error) {
	r, err := setUp(ctx, cfg, n)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.cp.Stop() }()
	for _, c := range controllers {
		rs, err := r.measure(ctx, c)
		if out = append(out, rs...); err != nil {
			return out, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return out, nil
}

// controller is one controller measured, on its side's Foos.
type controller struct {
	name, label string
	foos        schema.GroupVersionResource
	full        bool // with the ping's resync, and the adapter measured beside it
	args        []string
}

// controllers are measured at every N, in this order.
var controllers = []controller{
	{name: ClassicRaised, label: "classic", foos: classicGVR},
	{name: Ours, label: "ours", foos: oursGVR, full: true},
	{name: OursQueued, label: "ours-queued", foos: oursGVR, args: []string{"--ack=queued"}},
}

// measure starts c and measures its start, its first Foo, the ping's resync
// if c.full, the bursts, then its idle CPU and memory (and the adapter's).
func (r *run) measure(ctx context.Context, c controller) ([]Result, error) {
	r.cfg.Log("N=%d: %s", r.n, c.name)
	res, ad := &Result{Controller: c.name, N: r.n, Burst: r.cfg.Burst}, &Result{Controller: Adapters, N: r.n, Burst: r.cfg.Burst}
	start := time.Now()
	p, err := r.start(ctx, c)
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.Stop() }()
	res.ReadyMs = ms(time.Since(start))
	first, err := r.burst(ctx, p, c, "first-"+c.label, 1, 1)
	if res.FirstFooMs = res.ReadyMs + ms(first.took); err != nil {
		return nil, fmt.Errorf("first Foo: %w", err)
	}
	if c.full {
		if err := r.pingResync(ctx, res); err != nil {
			return []Result{*res}, err
		}
	}
	if err := r.bursts(ctx, res, p, c); err != nil {
		return []Result{*res}, err
	}
	procs := map[*Result]int{res: p.PID()}
	if c.full {
		procs[ad] = r.adapter.PID()
	}
	if err := r.idle(ctx, procs); err != nil || !c.full {
		return []Result{*res}, err
	}
	return []Result{*res, *ad}, nil
}

// start starts c and waits until it is ready: its workers run, or /readyz answers.
func (r *run) start(ctx context.Context, c controller) (*controlplane.Process, error) {
	args := slices.Concat([]string{"--kube-api-qps", strconv.Itoa(r.cfg.RaisedQPS), "--kube-api-burst", strconv.Itoa(2 * r.cfg.RaisedQPS)}, c.args)
	cmd := exec.Command(r.classicBin, slices.Concat(args, []string{"--kubeconfig", r.classicKC})...)
	if c.foos != classicGVR {
		if r.cfg.SenderAuth {
			args = append(args, "--oidc-audience="+localenv.OIDCAudience,
				"--oidc-subjects="+localenv.Subject(localenv.FoosIdentity)+","+localenv.Subject(localenv.ResyncIdentity))
		}
		cmd = exec.Command(r.ourBin, slices.Concat(args, []string{"--kubeconfig", r.ourKC, "--host", "127.0.0.1", "--port", strconv.Itoa(r.port),
			"--system-namespace", localenv.Namespace, "--cold-start-resync=true"})...)
		cmd.Env = append(os.Environ(), "LOG_LEVEL=warn")
	}
	p, err := r.cp.StartProcess(c.label, cmd)
	if err != nil {
		return nil, err
	}
	return p, until(ctx, p, time.Millisecond, func(context.Context) bool {
		if c.foos == classicGVR {
			return strings.Contains(p.LogTail(), "Started workers")
		}
		resp, err := http.Get(r.url + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
}

// until polls cond every interval, up to 15 minutes, failing if p exits.
func until(ctx context.Context, p *controlplane.Process, interval time.Duration, cond func(context.Context) bool) error {
	return wait.PollUntilContextTimeout(ctx, interval, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("%s exited: %s", p.Name, p.LogTail())
		}
		return cond(ctx), nil
	})
}

// idle records the CPU each process uses over the idle window, then its memory.
func (r *run) idle(ctx context.Context, procs map[*Result]int) error {
	for res, pid := range procs {
		res.IdleCPUSeconds, _ = cpuSeconds(pid) // so far; what it used, below
	}
	select {
	case <-time.After(r.cfg.Idle):
	case <-ctx.Done():
		return ctx.Err()
	}
	for res, pid := range procs {
		cpu, err := cpuSeconds(pid)
		if err == nil {
			res.SteadyRSSMiB, res.PeakRSSMiB, res.AnonRSSMiB, err = rss(pid)
		}
		if res.IdleCPUSeconds = cpu - res.IdleCPUSeconds; err != nil {
			return err
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
