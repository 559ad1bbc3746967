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

// Package localenv runs a whole operator on one machine, as a cluster with
// Knative would: a loopback control plane with the CRDs, accounts and roles
// of its config; the reconciler binary under its ServiceAccount's identity;
// and real ApiServerSource adapters delivering to it directly. The Foo
// operator's e2e tests, hack/run.sh and the benchmarks run Foo; the Bar and
// ContainerSource examples' e2e tests run theirs.
package localenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// Operator is what Up runs.
type Operator struct {
	// Name is the reconciler's: its binary and its ServiceAccount's.
	Name string
	// Main is the package of its command, from the repository's root,
	// built as .ko.yaml builds it (see Build).
	Main string
	// Namespace is its config's namespace, that of its accounts and its
	// config-observability (SYSTEM_NAMESPACE).
	Namespace string
	// Manifests are the files of its config that a cluster without Knative
	// can take (namespace, accounts, roles, CRDs), from the repository's root.
	Manifests []string
	// CRDs are the CRDs Up waits for, once the manifests are applied.
	CRDs []string
	// SourcesAccount is the ServiceAccount (of Namespace) the adapters run as.
	SourcesAccount string
	// Sources are its ApiServerSources, each run as an adapter.
	Sources []Source
	// PingSource names the PingSource whose event Resync sends.
	PingSource string
	// Canary returns once every adapter delivers (see Repeat): an adapter
	// sends nothing until its watch runs.
	Canary func(ctx context.Context, e *Env) error
}

// Source is an ApiServerSource, as an adapter's configuration.
type Source struct {
	Name   string
	Config controlplane.AdapterConfig
}

// Options configure Up.
type Options struct {
	// Dir keeps the control plane's data and every process's log; a
	// temporary directory when empty.
	Dir string
	// Log receives every line the processes write.
	Log io.Writer
	// ReconcilerArgs are added to the reconciler's command line.
	ReconcilerArgs []string
	// Audit records every request of the ServiceAccounts in CP.AuditLog.
	Audit bool
	// Progress, if set, is told what Up is doing.
	Progress func(format string, args ...any)
}

// Env is the running operator.
type Env struct {
	CP *controlplane.ControlPlane
	// Operator is what runs.
	Operator Operator
	// Kube is an admin client; Config its config.
	Kube   kubernetes.Interface
	Config *rest.Config
	// ReconcilerURL is where the adapters deliver.
	ReconcilerURL string
	// ReconcilerKubeconfig and SourcesKubeconfig are the ServiceAccounts' identities.
	ReconcilerKubeconfig, SourcesKubeconfig string
	Adapters                                []*controlplane.Process

	opts       Options
	bin        string
	port       int
	mu         sync.Mutex
	reconciler *controlplane.Process
	starts     int
}

// Up starts op and returns once the reconciler answers and every adapter
// delivers. On error, it stops what it started.
func Up(ctx context.Context, op Operator, opts Options) (_ *Env, err error) {
	say := opts.Progress
	if say == nil {
		say = func(string, ...any) {}
	}
	say("Starting etcd, kube-apiserver and kube-controller-manager")
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: opts.Dir, Log: opts.Log, ControllerManager: true, AuditServiceAccounts: opts.Audit})
	if err != nil {
		return nil, err
	}
	e := &Env{CP: cp, Operator: op, opts: opts}
	defer func() {
		if err != nil {
			_ = e.Down()
		}
	}()
	e.Config = rest.CopyConfig(cp.RESTConfig)
	e.Config.QPS, e.Config.Burst = 200, 400
	if e.Kube, err = kubernetes.NewForConfig(e.Config); err != nil {
		return nil, err
	}

	say("Applying the config: namespace, ServiceAccounts, RBAC, CRDs")
	if err := ApplyConfig(ctx, cp, op); err != nil {
		return nil, err
	}
	if e.ReconcilerKubeconfig, _, err = cp.KubeconfigForServiceAccount(ctx, op.Namespace, op.Name, 0); err != nil {
		return nil, err
	}
	if e.SourcesKubeconfig, _, err = cp.KubeconfigForServiceAccount(ctx, op.Namespace, op.SourcesAccount, 0); err != nil {
		return nil, err
	}

	say("Building and starting the reconciler as ServiceAccount %s/%s", op.Namespace, op.Name)
	if e.bin, err = BuildReconciler(ctx, op, cp.Dir); err != nil {
		return nil, err
	}
	if e.port, err = controlplane.FreePort(); err != nil {
		return nil, err
	}
	e.ReconcilerURL = "http://127.0.0.1:" + strconv.Itoa(e.port)
	if err := e.StartReconciler(ctx); err != nil {
		return nil, err
	}

	say("Starting %d ApiServerSource adapters as %s/%s", len(op.Sources), op.Namespace, op.SourcesAccount)
	for _, src := range op.Sources {
		p, err := cp.StartAdapter(src.Name, op.Namespace, e.ReconcilerURL, src.Config, e.SourcesKubeconfig)
		if err != nil {
			return nil, err
		}
		e.Adapters = append(e.Adapters, p)
	}
	say("Waiting for every adapter to deliver (a canary)")
	if err := e.WaitForDelivery(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

func fileArgs(root string, files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, "-f", filepath.Join(root, f))
	}
	return out
}

// ApplyConfig applies op's manifests and waits until its CRDs are served.
func ApplyConfig(ctx context.Context, cp *controlplane.ControlPlane, op Operator) error {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	// Eventing's PingSource CRD: the library keeps its requeue schedule in a
	// PingSource (no PingSource adapter runs here; tests send the pings).
	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "knative.dev/eventing")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		return fmt.Errorf("finding knative.dev/eventing's module: %w", err)
	}
	pingsources := filepath.Join(strings.TrimSpace(string(out)), "config", "core", "resources", "pingsource.yaml")
	if err := Kubectl(ctx, cp, nil, append([]string{"apply", "-f", pingsources}, fileArgs(root, op.Manifests)...)...); err != nil {
		return err
	}
	return Kubectl(ctx, cp, nil, append([]string{"wait", "--for=condition=Established", "--timeout=60s", "crd/pingsources.sources.knative.dev"}, op.CRDs...)...)
}

// BuildReconciler builds op's command into dir and returns its path.
func BuildReconciler(ctx context.Context, op Operator, dir string) (string, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, op.Name)
	return bin, Build(ctx, root, op.Main, bin)
}

// Build builds the package pkg of the source tree at root into bin with the
// environment and flags its .ko.yaml gives ko for the reconciler (static,
// -trimpath, without symbol tables, the grpcnotrace tag; those of
// ./cmd/foo-reconciler if .ko.yaml has no build of pkg). That is the binary
// that ships, so it is the one tests and benchmarks run (most of its
// resident memory is the binary's pages).
func Build(ctx context.Context, root, pkg, bin string) error {
	env, args, err := koBuild(root, pkg)
	if err != nil {
		return err
	}
	build := exec.CommandContext(ctx, "go", slices.Concat([]string{"build"}, args, []string{"-o", bin, pkg})...)
	build.Dir = root
	build.Env = append(os.Environ(), env...)
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("failed to build %s: %w\n%s", pkg, err, out)
	}
	return nil
}

// koBuild returns the environment and the go build flags that root's
// .ko.yaml gives its build of pkg, or else of ./cmd/foo-reconciler.
func koBuild(root, pkg string) (env, args []string, _ error) {
	b, err := os.ReadFile(filepath.Join(root, ".ko.yaml"))
	if err != nil {
		return nil, nil, err
	}
	var ko struct {
		Builds []struct {
			Main    string   `json:"main"`
			Env     []string `json:"env"`
			Flags   []string `json:"flags"`
			Ldflags []string `json:"ldflags"`
		} `json:"builds"`
	}
	if err := yaml.Unmarshal(b, &ko); err != nil {
		return nil, nil, fmt.Errorf("%s/.ko.yaml: %w", root, err)
	}
	for _, main := range []string{pkg, "./cmd/foo-reconciler"} {
		for _, b := range ko.Builds {
			if b.Main != main {
				continue
			}
			args = slices.Clone(b.Flags)
			if len(b.Ldflags) > 0 {
				args = append(args, "-ldflags="+strings.Join(b.Ldflags, " "))
			}
			return b.Env, args, nil
		}
	}
	return nil, nil, fmt.Errorf("%s/.ko.yaml has no build of %s nor ./cmd/foo-reconciler", root, pkg)
}

// Kubectl runs kubectl as the admin, writing its output to out (discarded if nil).
func (e *Env) Kubectl(ctx context.Context, out io.Writer, args ...string) error {
	return Kubectl(ctx, e.CP, out, args...)
}

// Kubectl runs kubectl as cp's admin, writing its output to out (discarded if nil).
func Kubectl(ctx context.Context, cp *controlplane.ControlPlane, out io.Writer, args ...string) error {
	bin, err := controlplane.BinaryPath("kubectl")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", cp.AdminKubeconfig}, args...)...)
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	err = cmd.Run()
	if out != nil {
		_, _ = out.Write(buf.Bytes())
	}
	if err != nil {
		return fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, buf.String())
	}
	return nil
}

// StartReconciler starts the reconciler on its port, as a Knative revision
// would after a scale from zero or a crash, and waits until it is ready.
// args are added to Options.ReconcilerArgs, for this start only.
func (e *Env) StartReconciler(ctx context.Context, args ...string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.starts++
	p, err := e.StartReconcilerAt(ctx, fmt.Sprintf("reconciler-%d", e.starts), e.port, args...)
	if p != nil {
		e.reconciler = p
	}
	return err
}

// StartReconcilerAt starts one more reconciler process, named name in the
// logs, on port (another pod of its Knative Service), and waits until it is
// ready. The caller stops it.
func (e *Env) StartReconcilerAt(ctx context.Context, name string, port int, args ...string) (*controlplane.Process, error) {
	cmd := exec.Command(e.bin, slices.Concat(
		[]string{"--kubeconfig", e.ReconcilerKubeconfig, "--host", "127.0.0.1", "--port", strconv.Itoa(port)}, e.opts.ReconcilerArgs, args)...)
	// K_SERVICE as Knative Serving sets it: the requeue schedule pings it.
	cmd.Env = append(os.Environ(), "LOG_LEVEL=info", "SYSTEM_NAMESPACE="+e.Operator.Namespace, "K_SERVICE="+e.Operator.Name)
	p, err := e.CP.StartProcess(name, cmd)
	if err != nil {
		return nil, err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	return p, wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("the reconciler exited: %s", p.LogTail())
		}
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// Port is the reconciler's port, where ReconcilerURL points.
func (e *Env) Port() int { return e.port }

// KillReconciler kills the reconciler with SIGKILL: a crash.
func (e *Env) KillReconciler() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.reconciler == nil {
		return errors.New("no reconciler runs")
	}
	err := e.reconciler.Kill()
	e.reconciler = nil
	return err
}

// StopReconciler stops the reconciler with SIGTERM, as Knative does when it
// scales to zero, and waits for it to exit.
func (e *Env) StopReconciler() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.reconciler == nil {
		return nil
	}
	err := e.reconciler.Stop()
	e.reconciler = nil
	return err
}

// Reconciler returns the running reconciler process, or nil.
func (e *Env) Reconciler() *controlplane.Process {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reconciler
}

// Resync delivers the event PingSource sends, and returns the HTTP status.
func (e *Env) Resync(ctx context.Context) (int, error) {
	code, body, err := e.post(ctx, map[string]string{
		"Ce-Type":   "dev.knative.sources.ping",
		"Ce-Source": "/apis/v1/namespaces/" + e.Operator.Namespace + "/pingsources/" + e.Operator.PingSource,
	}, []byte(`{"resync":true}`))
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("resync answered %d: %s", code, body)
	}
	return code, err
}

// SendObject delivers obj (whose apiVersion and kind must be set) as the
// ApiServerSource adapter would in Resource mode, verb being add, update or
// delete, whoever really sent it: a stale object, or a forged one. It
// returns the HTTP status and body.
func (e *Env) SendObject(ctx context.Context, verb string, obj runtime.Object, plural string) (int, string, error) {
	return e.SendObjectWithToken(ctx, "", verb, obj, plural)
}

// SendObjectWithToken is SendObject with an OIDC token in the Authorization
// header ("" for none), as a source sends when Knative's OIDC is on.
func (e *Env) SendObjectWithToken(ctx context.Context, token, verb string, obj runtime.Object, plural string) (int, string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0, "", err
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		return 0, "", fmt.Errorf("object %s/%s has no kind", m.GetNamespace(), m.GetName())
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return 0, "", err
	}
	apiVersion := gvk.GroupVersion().String()
	prefix := "/apis/"
	if gvk.Group == "" {
		prefix = "/api/"
	}
	headers := map[string]string{
		"Ce-Type":       "dev.knative.apiserver.resource." + verb,
		"Ce-Source":     e.CP.URL,
		"Ce-Subject":    prefix + apiVersion + "/namespaces/" + m.GetNamespace() + "/" + plural + "/" + m.GetName(),
		"Ce-Kind":       gvk.Kind,
		"Ce-Apiversion": apiVersion,
		"Ce-Name":       m.GetName(),
		"Ce-Namespace":  m.GetNamespace(),
	}
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	return e.post(ctx, headers, data)
}

// post delivers a binary-mode CloudEvent with JSON data to the reconciler.
func (e *Env) post(ctx context.Context, ce map[string]string, data []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.ReconcilerURL, bytes.NewReader(data))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Ce-Specversion", "1.0")
	req.Header.Set("Ce-Id", uuid.NewString())
	req.Header.Set("Content-Type", "application/json")
	for k, v := range ce {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(body)), nil
}

// Down stops everything Up started.
func (e *Env) Down() error {
	return e.CP.Stop()
}

// WaitForDelivery returns once every adapter delivers (Operator.Canary).
func (e *Env) WaitForDelivery(ctx context.Context) error {
	return e.Operator.Canary(ctx, e)
}

// Repeat makes change number i, i = 0, 1, ..., until done holds within a
// second of a change, for up to 2 minutes: an adapter sends nothing until
// its watch runs, and an unchanged object makes no event.
func Repeat(ctx context.Context, change func(i int) error, done func() bool) error {
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; time.Now().Before(deadline); i++ {
		if err := change(i); err != nil {
			return err
		}
		if wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Second, true,
			func(context.Context) (bool, error) { return done(), nil }) == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return errors.New("no effect within 2 minutes")
}
