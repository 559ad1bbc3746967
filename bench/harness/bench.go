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
// classic informer-based k8s.io/sample-controller (stock, and built with a
// raised client rate limit), on the same loopback API server in the same
// run, so that the ratios hold on a noisy machine. hack/bench.sh runs it and
// writes the results; its test runs a small smoke of it.
package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
	"github.com/frugal-operator/foo-operator/test/otlp"
)

// The controllers measured.
const (
	Ours          = "frugal (this project)"
	OursQueued    = "frugal, ack on enqueue"
	Classic       = "classic, stock (5 req/s)"
	ClassicRaised = "classic, raised QPS"
	Adapters      = "2 ApiServerSource adapters"
)

// Config says what to measure.
type Config struct {
	// Ns are the numbers of pre-existing Foos (each controller's own, each
	// with its Deployment), plus as many unrelated Deployments.
	Ns []int
	// Burst is how many Foos are created at once.
	Burst int
	// StockMaxN and StockBurst bound the stock classic: at 5 requests/s it
	// needs N/5 s to sync and 2·Burst/5 s for a burst.
	StockMaxN, StockBurst int
	// RaisedQPS is the raised classic's client rate limit (burst twice it).
	RaisedQPS int
	// Idle is the window over which idle CPU is measured.
	Idle time.Duration
	// Dir keeps each run's control plane and logs.
	Dir string
	// Profiles, if set, is where CPU profiles over the first ProfileSeconds
	// of each burst are written (n<N>-<burst namespace>-<process>.pprof):
	// the API server's in every burst, our reconciler's and the adapters'
	// in ours.
	Profiles       string
	ProfileSeconds int
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
	// written). NoResync: the same with our cold-start resync off.
	ReadyMs, FirstFooMs                 float64
	ReadyNoResyncMs, FirstFooNoResyncMs float64
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
	DrainMs                   float64
	// Resync: the ping's resync at steady state (N converged Foos): the
	// requests it made, by "VERB resource", and the time to its answer.
	Resync   map[string]float64
	ResyncMs float64
	// Events: what the reconciler was sent over its measured life (its
	// cold start, the first Foo, the ping and both bursts), per Foo of the
	// burst, by "type outcome", from its own metrics; AnswerMs the mean time
	// from an event's arrival to its answer. What the burst takes beyond
	// events × AnswerMs is the senders' (the adapters deliver one at a time).
	Events   map[string]float64 `json:",omitempty"`
	AnswerMs float64            `json:",omitempty"`
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

var classicGVR = schema.GroupVersionResource{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"}

// Run measures every controller at every N.
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

type run struct {
	cfg     Config
	n       int
	cp      *controlplane.ControlPlane
	kube    kubernetes.Interface
	foos    versioned.Interface
	dyn     dynamic.Interface
	ourBin  string
	metrics *otlp.Receiver
	port    int
	// pprofPort is where our reconciler serves net/http/pprof.
	pprofPort int
	saKC      string
	// classicKC is the classic's kubeconfig: a ServiceAccount's, as ours.
	classicKC string
	classic   map[string]string // name -> binary
	// adapters run for the whole of an N; pprof are their pprof addresses.
	adapters []*controlplane.Process
	pprof    []string
}

func runN(ctx context.Context, cfg Config, n int) ([]Result, error) {
	log := cfg.Log
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("n%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	log("N=%d: starting etcd and kube-apiserver", n)
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: dir, Profiling: cfg.Profiles != ""})
	if err != nil {
		return nil, err
	}
	defer func() { _ = cp.Stop() }()
	r := &run{cfg: cfg, n: n, cp: cp, classic: map[string]string{}}
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.QPS, rc.Burst = 2000, 4000
	r.kube = kubernetes.NewForConfigOrDie(rc)
	r.foos = versioned.NewForConfigOrDie(rc)
	r.dyn = dynamic.NewForConfigOrDie(rc)

	if err := localenv.ApplyConfig(ctx, cp, localenv.Foo); err != nil {
		return nil, err
	}
	crd, err := classicCRD()
	if err != nil {
		return nil, err
	}
	if err := localenv.Kubectl(ctx, cp, nil, "apply", "-f", crd); err != nil {
		return nil, err
	}
	if err := localenv.Kubectl(ctx, cp, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/foos.samplecontroller.k8s.io"); err != nil {
		return nil, err
	}
	for _, name := range []string{"sample-controller", "sample-controller-raised"} {
		if r.classic[name], err = controlplane.BinaryPath(name); err != nil {
			return nil, err
		}
	}
	if r.ourBin, err = localenv.BuildReconciler(ctx, localenv.Foo, dir); err != nil {
		return nil, err
	}
	if r.saKC, _, err = cp.KubeconfigForServiceAccount(ctx, localenv.Namespace, "foo-reconciler", 0); err != nil {
		return nil, err
	}
	if r.classicKC, err = r.classicServiceAccount(ctx); err != nil {
		return nil, err
	}
	sourcesKC, _, err := cp.KubeconfigForServiceAccount(ctx, localenv.Namespace, "foo-sources", 0)
	if err != nil {
		return nil, err
	}
	if r.port, err = controlplane.FreePort(); err != nil {
		return nil, err
	}
	if r.pprofPort, err = controlplane.FreePort(); err != nil {
		return nil, err
	}
	// Our reconciler's metrics (config/ sets SYSTEM_NAMESPACE), exported to
	// the harness when it stops.
	if r.metrics, err = otlp.Start(); err != nil {
		return nil, err
	}
	defer r.metrics.Close()
	// And, when profiles are asked for, its pprof on PROFILING_PORT (see
	// startOurs); otherwise its start does not pay for that listener.
	profiling := "disabled"
	if cfg.Profiles != "" {
		profiling = "enabled"
	}
	o11y := fmt.Sprintf(`{"data":{"metrics-protocol":"http/protobuf","metrics-endpoint":%q,"metrics-export-interval":"1h","runtime-profiling":%q}}`, r.metrics.URL, profiling)
	if _, err := r.kube.CoreV1().ConfigMaps(localenv.Namespace).Patch(ctx, "config-observability", types.MergePatchType,
		[]byte(o11y), metav1.PatchOptions{}); err != nil {
		return nil, err
	}

	log("N=%d: creating %d Foos of each kind with their Deployments, and %d unrelated Deployments", n, n, n)
	start := time.Now()
	if err := r.populate(ctx); err != nil {
		return nil, err
	}
	log("N=%d: populated in %.1fs", n, time.Since(start).Seconds())

	if cfg.SenderAuth {
		if err := localenv.OIDCIdentities(ctx, r.kube, localenv.FoosIdentity, localenv.ResyncIdentity); err != nil {
			return nil, err
		}
	}
	sink := "http://127.0.0.1:" + strconv.Itoa(r.port)
	for _, a := range []struct {
		name, identity string
		cfg            controlplane.AdapterConfig
	}{
		{"foos", localenv.FoosIdentity, localenv.FooSource},
	} {
		port, err := controlplane.FreePort()
		if err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		env := []string{"PPROF_ADDR=" + addr}
		if cfg.SenderAuth {
			env = append(env, localenv.AdapterOIDCEnv(a.identity)...)
		}
		p, err := cp.StartAdapter(a.name, localenv.Namespace, sink, a.cfg, sourcesKC, env...)
		if err != nil {
			return nil, err
		}
		r.adapters, r.pprof = append(r.adapters, p), append(r.pprof, addr)
	}

	// Our Foos get their status once, as they would have long ago.
	log("N=%d: settling our Foos' status (not measured)", n)
	p, err := r.startOurs(ctx, "settle", true)
	if err != nil {
		return nil, err
	}
	if err := r.waitOursSettled(ctx, "bench", n); err != nil {
		return nil, err
	}
	// The adapter delivers one event at a time: let it deliver the events of
	// those status writes before the measurements, which it would otherwise
	// queue behind them.
	r.settle(ctx)
	_ = p.Stop()

	var out []Result
	if n <= cfg.StockMaxN {
		res, err := r.measureClassic(ctx, Classic, "sample-controller", nil, cfg.StockBurst)
		out = append(out, res)
		if err != nil {
			return out, err
		}
	}
	qps := strconv.Itoa(cfg.RaisedQPS)
	res, err := r.measureClassic(ctx, ClassicRaised, "sample-controller-raised",
		[]string{"--kube-api-qps", qps, "--kube-api-burst", strconv.Itoa(2 * cfg.RaisedQPS)}, cfg.Burst)
	out = append(out, res)
	if err != nil {
		return out, err
	}
	res, ad, err := r.measureOurs(ctx, r.adapters, Ours)
	out = append(out, res, ad)
	if err != nil {
		return out, err
	}
	res, _, err = r.measureOurs(ctx, nil, OursQueued, "--ack=queued")
	return append(out, res), err
}

// classicServiceAccount makes the classic a ServiceAccount granted what it
// uses (its informers' reads, its writes), as ours runs as one: both pay
// for RBAC on every request. It returns that ServiceAccount's kubeconfig.
func (r *run) classicServiceAccount(ctx context.Context) (string, error) {
	const name = "sample-controller"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: localenv.Namespace}}
	if _, err := r.kube.CoreV1().ServiceAccounts(localenv.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{classicGVR.Group}, Resources: []string{"foos"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{classicGVR.Group}, Resources: []string{"foos/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "update"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}}
	if _, err := r.kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: localenv.Namespace}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name}}
	if _, err := r.kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	kc, _, err := r.cp.KubeconfigForServiceAccount(ctx, localenv.Namespace, name, 0)
	return kc, err
}

// classicCRD returns the path of the classic controller's CRD (with the
// status subresource, which its UpdateStatus needs), in the module cache:
// downloaded if the cache lacks it (go list -m would say nothing then).
func classicCRD() (string, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "mod", "download", "-json", "k8s.io/sample-controller")
	cmd.Dir = filepath.Join(root, "hack", "tools", "sample-controller")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating k8s.io/sample-controller: %w", err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("locating k8s.io/sample-controller: %v %s", err, mod.Error)
	}
	return filepath.Join(mod.Dir, "artifacts", "examples", "crd-status-subresource.yaml"), nil
}

// parallel runs f(0..n-1) on 32 workers and returns the first error.
func parallel(n int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

func (r *run) namespace(ctx context.Context, name string) error {
	_, err := r.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrs.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (r *run) populate(ctx context.Context) error {
	if err := r.namespace(ctx, "bench"); err != nil {
		return err
	}
	return parallel(r.n, func(i int) error {
		if _, err := r.createOurs(ctx, "bench", fmt.Sprintf("ours-%d", i), true); err != nil {
			return err
		}
		if _, err := r.createClassic(ctx, "bench", fmt.Sprintf("classic-%d", i), true); err != nil {
			return err
		}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%d", i), Namespace: "bench"},
			Spec:       classicDeploymentSpec(fmt.Sprintf("other-%d", i)),
		}
		_, err := r.kube.AppsV1().Deployments("bench").Create(ctx, d, metav1.CreateOptions{})
		return err
	})
}

// createOurs creates one of our Foos and, with deployment, its Deployment.
func (r *run) createOurs(ctx context.Context, ns, name string, deployment bool) (*samplesv1alpha1.Foo, error) {
	f := &samplesv1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       samplesv1alpha1.FooSpec{DeploymentName: name, Replicas: ptr.Int32(1)},
	}
	f, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, f, metav1.CreateOptions{})
	if err != nil || !deployment {
		return f, err
	}
	_, err = r.kube.AppsV1().Deployments(ns).Create(ctx, resources.MakeDeployment(f), metav1.CreateOptions{})
	return f, err
}

// createClassic creates one of the classic controller's Foos and, with
// deployment, its Deployment as that controller makes it.
func (r *run) createClassic(ctx context.Context, ns, name string, deployment bool) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "samplecontroller.k8s.io/v1alpha1",
		"kind":       "Foo",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"deploymentName": name, "replicas": int64(1)},
	}}
	u, err := r.dyn.Resource(classicGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	if err != nil || !deployment {
		return u, err
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "samplecontroller.k8s.io/v1alpha1", Kind: "Foo", Name: name, UID: u.GetUID(),
				Controller: ptr.Bool(true), BlockOwnerDeletion: ptr.Bool(true),
			}},
		},
		Spec: classicDeploymentSpec(name),
	}
	_, err = r.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	return u, err
}

func classicDeploymentSpec(name string) appsv1.DeploymentSpec {
	labels := map[string]string{"app": "nginx", "controller": name}
	return appsv1.DeploymentSpec{
		Replicas: ptr.Int32(1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}},
		},
	}
}

func (r *run) waitOursSettled(ctx context.Context, ns string, n int) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		done := 0
		for _, f := range list.Items {
			if f.Status.ObservedGeneration == f.Generation {
				done++
			}
		}
		return done >= n, nil
	})
}

func (r *run) startOurs(ctx context.Context, label string, resync bool, args ...string) (*controlplane.Process, error) {
	// The same client rate limit as the raised classic's.
	cmd := exec.Command(r.ourBin, append([]string{"--kubeconfig", r.saKC, "--host", "127.0.0.1", "--port", strconv.Itoa(r.port),
		"--system-namespace", localenv.Namespace,
		"--kube-api-qps", strconv.Itoa(r.cfg.RaisedQPS), "--kube-api-burst", strconv.Itoa(2 * r.cfg.RaisedQPS),
		"--cold-start-resync=" + strconv.FormatBool(resync)}, append(r.senderAuthArgs(), args...)...)...)
	cmd.Env = append(os.Environ(), "LOG_LEVEL=warn", "PROFILING_PORT="+strconv.Itoa(r.pprofPort))
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

func (r *run) waitReady(ctx context.Context, p *controlplane.Process, ready func() bool) error {
	return wait.PollUntilContextTimeout(ctx, time.Millisecond, 5*time.Minute, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("%s exited: %s", p.Name, p.LogTail())
		}
		return ready(), nil
	})
}

// reconciled tells whether a Foo has its Deployment and a written status.
func (r *run) reconciled(ctx context.Context, classic bool, ns, name string) bool {
	if _, err := r.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		return false
	}
	if classic {
		u, err := r.dyn.Resource(classicGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && u.Object["status"] != nil
	}
	f, err := r.foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, name, metav1.GetOptions{})
	return err == nil && f.Status.ObservedGeneration >= 1
}

// firstFoo creates a Foo and returns how long until it is reconciled.
func (r *run) firstFoo(ctx context.Context, classic bool, ns string) (time.Duration, error) {
	if err := r.namespace(ctx, ns); err != nil {
		return 0, err
	}
	start := time.Now()
	var err error
	if classic {
		_, err = r.createClassic(ctx, ns, "first", false)
	} else {
		_, err = r.createOurs(ctx, ns, "first", false)
	}
	if err != nil {
		return 0, err
	}
	err = wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		return r.reconciled(ctx, classic, ns, "first"), nil
	})
	return time.Since(start), err
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (r *run) measureClassic(ctx context.Context, name, bin string, args []string, burst int) (Result, error) {
	res := Result{Controller: name, N: r.n, Burst: burst}
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
	res.ReadyMs = ms(time.Since(start))
	first, err := r.firstFoo(ctx, true, "first-"+bin)
	if err != nil {
		return res, err
	}
	res.FirstFooMs = res.ReadyMs + ms(first)
	r.settle(ctx)
	if err := r.burst(ctx, &res, p, true, "burst-"+bin); err != nil {
		return res, err
	}
	if err := r.updateBurst(ctx, &res, p, true, "burst-"+bin); err != nil {
		return res, err
	}
	return res, r.idle(ctx, &res, p)
}

// measureOurs measures our reconciler started with args; with adapters,
// also the cold start with the resync off, and the adapters' own cost.
func (r *run) measureOurs(ctx context.Context, adapters []*controlplane.Process, name string, args ...string) (Result, Result, error) {
	res := Result{Controller: name, N: r.n, Burst: r.cfg.Burst}
	ad := Result{Controller: Adapters, N: r.n, Burst: r.cfg.Burst}
	// "--ack=queued" labels processes and namespaces "-ack-queued".
	label := strings.NewReplacer("--", "-", "=", "-").Replace(strings.Join(args, ""))
	if adapters != nil {
		r.cfg.Log("N=%d: %s, cold start with the resync off", r.n, name)
		start := time.Now()
		p, err := r.startOurs(ctx, "noresync", false)
		if err != nil {
			return res, ad, err
		}
		res.ReadyNoResyncMs = ms(time.Since(start))
		first, err := r.firstFoo(ctx, false, "first-noresync")
		if err != nil {
			return res, ad, err
		}
		res.FirstFooNoResyncMs = res.ReadyNoResyncMs + ms(first)
		_ = p.Stop()
	}

	r.cfg.Log("N=%d: %s, cold start with the resync on, burst, idle", r.n, name)
	start := time.Now()
	r.metrics.Reset()
	p, err := r.startOurs(ctx, "measured"+label, true, args...)
	if err != nil {
		return res, ad, err
	}
	res.ReadyMs = ms(time.Since(start))
	first, err := r.firstFoo(ctx, false, "first-resync"+label)
	if err != nil {
		return res, ad, err
	}
	res.FirstFooMs = res.ReadyMs + ms(first)
	r.settle(ctx)
	if adapters != nil {
		if err := r.pingResync(ctx, &res); err != nil {
			return res, ad, err
		}
	}
	if err := r.burst(ctx, &res, p, false, "burst-ours"+label); err != nil {
		return res, ad, err
	}
	if err := r.updateBurst(ctx, &res, p, false, "burst-ours"+label); err != nil {
		return res, ad, err
	}
	cpu0 := make([]float64, len(adapters))
	for i, a := range adapters {
		cpu0[i], _ = CPUSeconds(a.PID())
	}
	if err := r.idle(ctx, &res, p); err != nil {
		return res, ad, err
	}
	for i, a := range adapters {
		c, _ := CPUSeconds(a.PID())
		ad.IdleCPUSeconds += c - cpu0[i]
		now, peak, anon, _ := RSS(a.PID())
		ad.SteadyRSSMiB += now
		ad.PeakRSSMiB += peak
		ad.AnonRSSMiB += anon
	}
	// Scaling to zero: SIGTERM, as Knative sends it; then 0 pods.
	drain := time.Now()
	if err := p.Stop(); err != nil {
		return res, ad, fmt.Errorf("the reconciler did not stop cleanly: %w", err)
	}
	res.DrainMs = ms(time.Since(drain))
	events := r.metrics.Values("serverless.events")
	res.Events = map[string]float64{}
	for attrs, v := range events {
		// "outcome=...,type=..." -> "type outcome"
		var outcome, typ string
		for _, kv := range strings.Split(attrs, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "outcome":
				outcome = v
			case "type":
				typ = strings.TrimPrefix(v, "dev.knative.")
			}
		}
		res.Events[typ+" "+outcome] += v / float64(res.Burst)
	}
	if n, _ := r.metrics.Sum("serverless.event.duration", nil); n > 0 {
		res.AnswerMs = 1000 * r.metrics.HistogramSum("serverless.event.duration", nil) / n
	}
	return res, ad, nil
}

// pingResync sends the event PingSource sends and records what the resync
// cost the API server, with every Foo converged.
func (r *run) pingResync(ctx context.Context, res *Result) error {
	r.cfg.Log("N=%d: %s: ping resync", r.n, res.Controller)
	// A token as PingSource's, asked for before the count begins.
	token := ""
	if r.cfg.SenderAuth {
		var err error
		if token, err = localenv.Token(ctx, r.kube, localenv.ResyncIdentity, localenv.OIDCAudience); err != nil {
			return err
		}
	}
	before, err := requestCounts(ctx, r.kube)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:"+strconv.Itoa(r.port), strings.NewReader(`{"resync":true}`))
	if err != nil {
		return err
	}
	for k, v := range map[string]string{"Ce-Specversion": "1.0", "Ce-Id": "bench-resync", "Ce-Type": "dev.knative.sources.ping",
		"Ce-Source": "/apis/v1/namespaces/" + localenv.Namespace + "/pingsources/foo-resync", "Content-Type": "application/json"} {
		req.Header.Set(k, v)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	res.ResyncMs = ms(time.Since(start))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the ping resync was answered %d", resp.StatusCode)
	}
	after, err := requestCounts(ctx, r.kube)
	if err != nil {
		return err
	}
	res.Resync = delta(before, after)
	delete(res.Resync, "GET ") // the harness's first scrape of /metrics
	return nil
}

// settle waits until the API server's request counters stop moving for a
// second (the controller's start-up work done), at most a minute.
func (r *run) settle(ctx context.Context) {
	var last float64 = -1
	_ = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		c, err := requestCounts(ctx, r.kube)
		if err != nil {
			return false, nil
		}
		total := 0.0
		for k, v := range c {
			if !strings.HasPrefix(k, "WATCH") {
				total += v
			}
		}
		// The scrape itself is one request.
		stable := total-last <= 1
		last = total
		return stable, nil
	})
}

// burst creates cfg.Burst Foos at once and times their reconciles, from a
// watch on the harness's side.
func (r *run) burst(ctx context.Context, res *Result, p *controlplane.Process, classic bool, ns string) error {
	b := res.Burst
	r.cfg.Log("N=%d: %s: burst of %d Foos", r.n, res.Controller, b)
	if err := r.namespace(ctx, ns); err != nil {
		return err
	}
	var mu sync.Mutex
	created, depSeen, statusSeen := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The watches go on their own connection (the creates would share one
	// HTTP/2 connection with them otherwise) and resume where they were if
	// the server ends them.
	wc := rest.CopyConfig(r.cp.RESTConfig)
	wc.Dial = (&net.Dialer{}).DialContext // an uncached transport: its own connection
	wkube, wdyn := kubernetes.NewForConfigOrDie(wc), dynamic.NewForConfigOrDie(wc)
	wfoos := versioned.NewForConfigOrDie(wc)
	// Any list's resourceVersion is "now" for both watches.
	now, err := wkube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	dw, err := retryWatch(wctx, now.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) {
		return wkube.AppsV1().Deployments(ns).Watch(wctx, o)
	})
	if err != nil {
		return err
	}
	fw, err := retryWatch(wctx, now.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) {
		if classic {
			return wdyn.Resource(classicGVR).Namespace(ns).Watch(wctx, o)
		}
		return wfoos.SamplecontrollerV1alpha1().Foos(ns).Watch(wctx, o)
	})
	if err != nil {
		return err
	}
	go func() {
		for e := range dw.ResultChan() {
			if d, ok := e.Object.(*appsv1.Deployment); ok && e.Type == watch.Added {
				mu.Lock()
				depSeen[d.Name] = time.Now()
				mu.Unlock()
			}
		}
	}()
	go func() {
		for e := range fw.ResultChan() {
			now := time.Now()
			var name string
			var written bool
			switch o := e.Object.(type) {
			case *unstructured.Unstructured:
				name, written = o.GetName(), o.Object["status"] != nil
			case *samplesv1alpha1.Foo:
				name, written = o.Name, o.Status.ObservedGeneration >= 1
			}
			if written {
				mu.Lock()
				if _, ok := statusSeen[name]; !ok {
					statusSeen[name] = now
				}
				mu.Unlock()
			}
		}
	}()

	before, err := requestCounts(ctx, r.kube)
	if err != nil {
		return err
	}
	var profiles sync.WaitGroup
	if r.cfg.Profiles != "" {
		// The API server's, as the admin; then ours and the adapters'.
		apiserver, err := rest.HTTPClientFor(r.cp.RESTConfig)
		if err != nil {
			return err
		}
		type target struct {
			name, base string
			client     *http.Client
		}
		targets := []target{{"kube-apiserver", r.cp.URL, apiserver}}
		if !classic {
			targets = append(targets, target{"reconciler", "http://127.0.0.1:" + strconv.Itoa(r.pprofPort), http.DefaultClient})
			for i, a := range r.adapters {
				targets = append(targets, target{a.Name, "http://" + r.pprof[i], http.DefaultClient})
			}
		}
		for _, t := range targets {
			path := filepath.Join(r.cfg.Profiles, fmt.Sprintf("n%d-%s-%s.pprof", r.n, ns, t.name))
			profiles.Go(func() {
				if err := cpuProfile(ctx, t.client, t.base, r.cfg.ProfileSeconds, path); err != nil {
					r.cfg.Log("N=%d: %s: %v", r.n, t.name, err)
				}
			})
		}
	}
	defer profiles.Wait()
	cpu0 := r.cpu(p)
	first := time.Now()
	err = parallel(b, func(i int) error {
		name := fmt.Sprintf("b-%d", i)
		var err error
		if classic {
			_, err = r.createClassic(ctx, ns, name, false)
		} else {
			_, err = r.createOurs(ctx, ns, name, false)
		}
		mu.Lock()
		created[name] = time.Now()
		mu.Unlock()
		return err
	})
	if err != nil {
		return err
	}
	var lat []float64
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 15*time.Minute, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if p.Exited() {
			return false, fmt.Errorf("%s exited: %s", p.Name, p.LogTail())
		}
		return len(depSeen) >= b && len(statusSeen) >= b, nil
	})
	mu.Lock()
	last := first
	for name, c := range created {
		d, s := depSeen[name], statusSeen[name]
		done := d
		if s.After(done) {
			done = s
		}
		if done.After(last) {
			last = done
		}
		if !d.IsZero() && !s.IsZero() {
			lat = append(lat, ms(done.Sub(c)))
		}
	}
	mu.Unlock()
	res.BurstSeconds = last.Sub(first).Seconds()
	res.BurstCPU = delta(cpu0, r.cpu(p))
	if err != nil {
		res.Incomplete = fmt.Sprintf("burst: %d of %d reconciled: %v", len(lat), b, err)
		return err
	}
	sort.Float64s(lat)
	res.P50Ms, res.P99Ms = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
	r.settle(ctx)
	after, err := requestCounts(ctx, r.kube)
	if err != nil {
		return err
	}
	d := delta(before, after)
	// Take out the harness's own requests: its creates and its scrapes.
	d["POST foos"] -= float64(b)
	delete(d, "GET ") // non-resource GETs: the harness's /metrics scrapes
	res.Requests = map[string]float64{}
	for _, k := range sortedKeys(d) {
		if d[k] <= 0 || strings.HasPrefix(k, "WATCH") {
			continue
		}
		per := d[k] / float64(b)
		res.Requests[k] = per
		if isWrite(k) {
			res.WritesPerFoo += per
		} else {
			res.ReadsPerFoo += per
		}
	}
	return nil
}

// updatedReplicas is what an update burst sets every Foo's replicas to
// (they are made with 1).
const updatedReplicas = 2

// updateBurst gives every Foo of the burst in ns updatedReplicas at once,
// once the burst is done and settled, and records the time from the first
// update until every Deployment has that count and, ours, every Foo's status
// reports its new generation.
func (r *run) updateBurst(ctx context.Context, res *Result, p *controlplane.Process, classic bool, ns string) error {
	b := res.Burst
	r.cfg.Log("N=%d: %s: update burst of %d Foos", r.n, res.Controller, b)
	var mu sync.Mutex
	deps, statuses := map[string]bool{}, map[string]bool{}
	if classic {
		statuses = nil // not waited for
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wc := rest.CopyConfig(r.cp.RESTConfig)
	wc.Dial = (&net.Dialer{}).DialContext // its own connection, as burst's
	wkube, wfoos := kubernetes.NewForConfigOrDie(wc), versioned.NewForConfigOrDie(wc)
	now, err := wkube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	dw, err := retryWatch(wctx, now.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) {
		return wkube.AppsV1().Deployments(ns).Watch(wctx, o)
	})
	if err != nil {
		return err
	}
	go func() {
		for e := range dw.ResultChan() {
			if d, ok := e.Object.(*appsv1.Deployment); ok && d.Spec.Replicas != nil && *d.Spec.Replicas == updatedReplicas {
				mu.Lock()
				deps[d.Name] = true
				mu.Unlock()
			}
		}
	}()
	if !classic {
		fw, err := retryWatch(wctx, now.ResourceVersion, func(o metav1.ListOptions) (watch.Interface, error) {
			return wfoos.SamplecontrollerV1alpha1().Foos(ns).Watch(wctx, o)
		})
		if err != nil {
			return err
		}
		go func() {
			for e := range fw.ResultChan() {
				if f, ok := e.Object.(*samplesv1alpha1.Foo); ok && f.Generation > 1 && f.Status.ObservedGeneration == f.Generation {
					mu.Lock()
					statuses[f.Name] = true
					mu.Unlock()
				}
			}
		}()
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, updatedReplicas))
	first := time.Now()
	err = parallel(b, func(i int) error {
		name := fmt.Sprintf("b-%d", i)
		var err error
		if classic {
			_, err = r.dyn.Resource(classicGVR).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		} else {
			_, err = r.foos.SamplecontrollerV1alpha1().Foos(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		return err
	})
	if err != nil {
		return err
	}
	var done time.Time
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 15*time.Minute, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if p.Exited() {
			return false, fmt.Errorf("%s exited: %s", p.Name, p.LogTail())
		}
		done = time.Now()
		return len(deps) >= b && (classic || len(statuses) >= b), nil
	})
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		res.Incomplete = fmt.Sprintf("update burst: %d of %d Deployments updated, %d statuses: %v", len(deps), b, len(statuses), err)
		return err
	}
	res.UpdateSeconds = done.Sub(first).Seconds()
	r.settle(ctx)
	return nil
}

// cpu returns the CPU seconds the processes a burst involves have used, by
// role, and the machine's idle CPU seconds ("machine idle").
func (r *run) cpu(controller *controlplane.Process) map[string]float64 {
	m := map[string]float64{}
	add := func(role string, pid int) {
		if c, err := CPUSeconds(pid); err == nil {
			m[role] += c
		}
	}
	add("kube-apiserver", r.cp.APIServer.PID())
	add("etcd", r.cp.Etcd.PID())
	add("controller", controller.PID())
	for _, a := range r.adapters {
		add("adapters", a.PID())
	}
	add("harness", os.Getpid())
	if idle, err := machineIdleSeconds(); err == nil {
		m["machine idle"] = idle
	}
	return m
}

// cpuProfile writes the CPU profile of the next seconds of the process
// serving net/http/pprof at base (its scheme, host and port) to path.
func cpuProfile(ctx context.Context, client *http.Client, base string, seconds int, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, seconds), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("CPU profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("CPU profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("CPU profile: %w", err)
	}
	return f.Close()
}

// retryWatch watches from the resourceVersion rv (a list's: "now") and
// resumes from the last event's when the server ends the watch.
func retryWatch(ctx context.Context, rv string, w func(metav1.ListOptions) (watch.Interface, error)) (watch.Interface, error) {
	return watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) { return w(o) },
	})
}

// idle measures the CPU a process uses over cfg.Idle, then its memory. The
// window is a measurement, not a wait for anything.
func (r *run) idle(ctx context.Context, res *Result, p *controlplane.Process) error {
	c0, err := CPUSeconds(p.PID())
	if err != nil {
		return err
	}
	select {
	case <-time.After(r.cfg.Idle):
	case <-ctx.Done():
		return ctx.Err()
	}
	c1, err := CPUSeconds(p.PID())
	if err != nil {
		return err
	}
	res.IdleCPUSeconds = c1 - c0
	res.SteadyRSSMiB, res.PeakRSSMiB, res.AnonRSSMiB, err = RSS(p.PID())
	return err
}

// WriteJSON writes the report as JSON.
func (rep *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
