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
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// measureClassic starts the classic binary bin with args and measures its
// start, its first Foo, a burst of creations, one of updates and its idle
// CPU and memory.
func (r *run) measureClassic(ctx context.Context, name, bin string, args []string) (Result, error) {
	res := Result{Controller: name, N: r.n, Burst: r.cfg.Burst}
	r.cfg.Log("N=%d: %s", r.n, name)
	cmd := exec.Command(r.classic[bin], append([]string{"--kubeconfig", r.classicKC}, args...)...)
	start := time.Now()
	p, err := r.cp.StartProcess(bin, cmd)
	if err != nil {
		return res, err
	}
	defer func() { _ = p.Stop() }()
	if err := r.waitReady(ctx, p, func() bool { return strings.Contains(p.LogTail(), "Started workers") }); err != nil {
		return res, err
	}
	return res, r.measure(ctx, &res, p, true, start, bin, nil)
}

// measureOurs measures our reconciler started with args as the classic is
// measured; with full, also the ping's resync and the adapters' own cost
// over the idle window (the second Result); then the time it takes to stop.
func (r *run) measureOurs(ctx context.Context, full bool, name string, args ...string) (Result, Result, error) {
	res := Result{Controller: name, N: r.n, Burst: r.cfg.Burst}
	ad := Result{Controller: Adapters, N: r.n, Burst: r.cfg.Burst}
	// "--ack=queued" labels processes and namespaces "-ack-queued".
	label := strings.NewReplacer("--", "-", "=", "-").Replace(strings.Join(args, ""))
	r.cfg.Log("N=%d: %s, cold start, burst, idle", r.n, name)
	start := time.Now()
	p, err := r.startOurs(ctx, "measured"+label, args...)
	if err != nil {
		return res, ad, err
	}
	adapters := &ad
	if !full {
		adapters = nil
	}
	if err := r.measure(ctx, &res, p, false, start, "ours"+label, adapters); err != nil {
		return res, ad, err
	}
	// Scaling to zero: SIGTERM, as Knative sends it; then 0 pods.
	drain := time.Now()
	if err := p.Stop(); err != nil {
		return res, ad, fmt.Errorf("the reconciler did not stop cleanly: %w", err)
	}
	res.DrainMs = ms(time.Since(drain))
	return res, ad, nil
}

// measure times a started controller's ready and first Foo, then a burst
// of creations and one of updates in namespace burst-<label>, and the idle
// window. With ad (ours only), the ping's resync before the bursts, and
// the adapters' cost over the idle window into ad.
func (r *run) measure(ctx context.Context, res *Result, p *controlplane.Process, classic bool, start time.Time, label string, ad *Result) error {
	res.ReadyMs = ms(time.Since(start))
	first, err := r.firstFoo(ctx, classic, "first-"+label)
	if err != nil {
		return err
	}
	res.FirstFooMs = res.ReadyMs + ms(first)
	r.settle(ctx)
	if ad != nil {
		if err := r.pingResync(ctx, res); err != nil {
			return err
		}
	}
	if err := r.burst(ctx, res, p, classic, "burst-"+label); err != nil {
		return err
	}
	if err := r.updateBurst(ctx, res, p, classic, "burst-"+label); err != nil {
		return err
	}
	cpu0 := r.adaptersCPU()
	if err := r.idle(ctx, res, p); err != nil || ad == nil {
		return err
	}
	r.adaptersCost(ad, cpu0)
	return nil
}

// startOurs starts our reconciler, with the raised classic's client rate
// limit, and waits until it is ready.
func (r *run) startOurs(ctx context.Context, label string, args ...string) (*controlplane.Process, error) {
	cmd := exec.Command(r.ourBin, append([]string{"--kubeconfig", r.saKC, "--host", "127.0.0.1", "--port", strconv.Itoa(r.port),
		"--system-namespace", localenv.Namespace,
		"--kube-api-qps", strconv.Itoa(r.cfg.RaisedQPS), "--kube-api-burst", strconv.Itoa(2 * r.cfg.RaisedQPS),
		"--cold-start-resync=true"}, append(r.senderAuthArgs(), args...)...)...)
	cmd.Env = append(os.Environ(), "LOG_LEVEL=warn")
	p, err := r.cp.StartProcess("reconciler-"+label, cmd)
	if err != nil {
		return nil, err
	}
	return p, r.waitReady(ctx, p, func() bool {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(r.port) + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// senderAuthArgs are our reconciler's flags for Config.SenderAuth.
func (r *run) senderAuthArgs() []string {
	if !r.cfg.SenderAuth {
		return nil
	}
	return []string{"--oidc-audience=" + localenv.OIDCAudience, "--oidc-subjects=" + strings.Join([]string{
		localenv.Subject(localenv.FoosIdentity), localenv.Subject(localenv.ResyncIdentity)}, ",")}
}

// waitReady polls ready every millisecond until it holds, failing if the
// process exits.
func (r *run) waitReady(ctx context.Context, p *controlplane.Process, ready func() bool) error {
	return wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("%s exited: %s", p.Name, p.LogTail())
		}
		return ready(), nil
	})
}

// firstFoo creates a Foo and returns how long until it is reconciled.
func (r *run) firstFoo(ctx context.Context, classic bool, ns string) (time.Duration, error) {
	if err := r.namespace(ctx, ns); err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := r.createFoo(ctx, classic, ns, "first"); err != nil {
		return 0, err
	}
	err := wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		return r.reconciled(ctx, classic, ns, "first"), nil
	})
	return time.Since(start), err
}

// idle measures the CPU a process uses over cfg.Idle, then its memory. The
// window is a measurement, not a wait for anything.
func (r *run) idle(ctx context.Context, res *Result, p *controlplane.Process) error {
	c0, err := cpuSeconds(p.PID())
	if err != nil {
		return err
	}
	select {
	case <-time.After(r.cfg.Idle):
	case <-ctx.Done():
		return ctx.Err()
	}
	c1, err := cpuSeconds(p.PID())
	if err != nil {
		return err
	}
	res.IdleCPUSeconds = c1 - c0
	res.SteadyRSSMiB, res.PeakRSSMiB, res.AnonRSSMiB, err = rss(p.PID())
	return err
}

// adaptersCPU is the CPU seconds the adapters have used.
func (r *run) adaptersCPU() float64 {
	total := 0.0
	for _, a := range r.adapters {
		c, _ := cpuSeconds(a.PID())
		total += c
	}
	return total
}

// adaptersCost records the adapters' memory and the CPU they used since
// cpu0.
func (r *run) adaptersCost(ad *Result, cpu0 float64) {
	ad.IdleCPUSeconds = r.adaptersCPU() - cpu0
	for _, a := range r.adapters {
		now, peak, anon, _ := rss(a.PID())
		ad.SteadyRSSMiB += now
		ad.PeakRSSMiB += peak
		ad.AnonRSSMiB += anon
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
