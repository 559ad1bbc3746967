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

// Package localenv runs the whole operator on one machine, as a cluster with
// Knative would: a loopback control plane with config/'s CRD, accounts and
// roles; the reconciler binary under its ServiceAccount's identity; and two
// real ApiServerSource adapters (Foos; Deployments owned by a Foo, Resource
// mode) delivering to it directly. The e2e tests and hack/run.sh share it.
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"knative.dev/pkg/ptr"
	"sigs.k8s.io/yaml"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// Namespace is where config/ puts the operator's accounts.
const Namespace = "foo-operator"

// The manifests of config/ that a cluster without Knative can take.
var manifests = []string{
	"config/100-namespace.yaml",
	"config/200-serviceaccounts.yaml",
	"config/200-clusterroles.yaml",
	"config/200-aggregated-clusterroles.yaml",
	"config/200-roles.yaml",
	"config/201-clusterrolebindings.yaml",
	"config/201-rolebindings.yaml",
	"config/300-foo.yaml",
	"config/400-config-observability.yaml",
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
	// Kube and Foos are admin clients.
	Kube kubernetes.Interface
	Foos versioned.Interface
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

// Up starts everything and returns once the reconciler answers and both
// adapters deliver. On error, it stops what it started.
func Up(ctx context.Context, opts Options) (_ *Env, err error) {
	say := opts.Progress
	if say == nil {
		say = func(string, ...any) {}
	}
	say("Starting etcd, kube-apiserver and kube-controller-manager")
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: opts.Dir, Log: opts.Log, ControllerManager: true, AuditServiceAccounts: opts.Audit})
	if err != nil {
		return nil, err
	}
	e := &Env{CP: cp, opts: opts}
	defer func() {
		if err != nil {
			_ = e.Down()
		}
	}()
	cfg := rest.CopyConfig(cp.RESTConfig)
	cfg.QPS, cfg.Burst = 200, 400
	if e.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if e.Foos, err = versioned.NewForConfig(cfg); err != nil {
		return nil, err
	}

	say("Applying config/: namespace, ServiceAccounts, RBAC, the Foo CRD")
	if err := ApplyConfig(ctx, cp); err != nil {
		return nil, err
	}
	if e.ReconcilerKubeconfig, _, err = cp.KubeconfigForServiceAccount(ctx, Namespace, "foo-reconciler", 0); err != nil {
		return nil, err
	}
	if e.SourcesKubeconfig, _, err = cp.KubeconfigForServiceAccount(ctx, Namespace, "foo-sources", 0); err != nil {
		return nil, err
	}

	say("Building and starting the reconciler as ServiceAccount %s/foo-reconciler", Namespace)
	if e.bin, err = BuildReconciler(ctx, cp.Dir); err != nil {
		return nil, err
	}
	if e.port, err = controlplane.FreePort(); err != nil {
		return nil, err
	}
	e.ReconcilerURL = "http://127.0.0.1:" + strconv.Itoa(e.port)
	if err := e.StartReconciler(ctx); err != nil {
		return nil, err
	}

	say("Starting two ApiServerSource adapters (Foos; Deployments owned by a Foo) as %s/foo-sources", Namespace)
	fooGVR := schema.GroupVersionResource{Group: "samplecontroller.knative.io", Version: "v1alpha1", Resource: "foos"}
	depGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	for _, a := range []struct {
		name string
		cfg  controlplane.AdapterConfig
	}{
		{"foos", controlplane.AdapterConfig{AllNamespaces: true, Mode: "Resource",
			Resources: []controlplane.AdapterResource{{GVR: fooGVR}}}},
		{"foo-deployments", controlplane.AdapterConfig{AllNamespaces: true, Mode: "Resource",
			Resources: []controlplane.AdapterResource{{GVR: depGVR}},
			Owner:     &controlplane.AdapterOwner{APIVersion: "samplecontroller.knative.io/v1alpha1", Kind: "Foo"}}},
	} {
		p, err := cp.StartAdapter(a.name, Namespace, e.ReconcilerURL, a.cfg, e.SourcesKubeconfig)
		if err != nil {
			return nil, err
		}
		e.Adapters = append(e.Adapters, p)
	}
	say("Waiting for both adapters to deliver (a canary Foo)")
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

// ApplyConfig applies the manifests of config/ that a cluster without
// Knative can take (namespace, accounts, roles, the CRD) and waits until the
// CRD is served.
func ApplyConfig(ctx context.Context, cp *controlplane.ControlPlane) error {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	if err := Kubectl(ctx, cp, nil, append([]string{"apply"}, fileArgs(root, manifests)...)...); err != nil {
		return err
	}
	return Kubectl(ctx, cp, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/foos.samplecontroller.knative.io")
}

// BuildReconciler builds cmd/foo-reconciler into dir and returns its path.
func BuildReconciler(ctx context.Context, dir string) (string, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "foo-reconciler")
	return bin, Build(ctx, root, "./cmd/foo-reconciler", bin)
}

// Build builds the package pkg of the source tree at root into bin with the
// environment and flags its .ko.yaml gives ko for the reconciler (static,
// -trimpath, without symbol tables, the grpcnotrace tag). That is the binary
// that ships, so it is the one tests and benchmarks run (most of its
// resident memory is the binary's pages).
func Build(ctx context.Context, root, pkg, bin string) error {
	env, args, err := koBuild(root)
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
// .ko.yaml gives its build of ./cmd/foo-reconciler.
func koBuild(root string) (env, args []string, _ error) {
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
	for _, b := range ko.Builds {
		if b.Main != "./cmd/foo-reconciler" {
			continue
		}
		args = slices.Clone(b.Flags)
		if len(b.Ldflags) > 0 {
			args = append(args, "-ldflags="+strings.Join(b.Ldflags, " "))
		}
		return b.Env, args, nil
	}
	return nil, nil, fmt.Errorf("%s/.ko.yaml has no build of ./cmd/foo-reconciler", root)
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
	cmd := exec.Command(e.bin, slices.Concat(
		[]string{"--kubeconfig", e.ReconcilerKubeconfig, "--host", "127.0.0.1", "--port", strconv.Itoa(e.port)}, e.opts.ReconcilerArgs, args)...)
	cmd.Env = append(os.Environ(), "LOG_LEVEL=info", "SYSTEM_NAMESPACE="+Namespace)
	p, err := e.CP.StartProcess(fmt.Sprintf("reconciler-%d", e.starts), cmd)
	if err != nil {
		return err
	}
	e.reconciler = p
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("the reconciler exited: %s", p.LogTail())
		}
		resp, err := http.Get(e.ReconcilerURL + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

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
		"Ce-Source": "/apis/v1/namespaces/" + Namespace + "/pingsources/foo-resync",
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

// WaitForDelivery proves both adapters deliver: a change of a canary Foo's
// replicas must reach its Deployment (the Foo adapter; the cold-start resync
// ran before the change), and a hand-scaled Deployment must be scaled back
// (the owned-Deployment adapter). An adapter sends nothing until its watch
// runs, so each change is repeated until its effect is seen.
func (e *Env) WaitForDelivery(ctx context.Context) error {
	foos := e.Foos.SamplecontrollerV1alpha1().Foos(Namespace)
	deps := e.Kube.AppsV1().Deployments(Namespace)
	canary := &samplesv1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: "canary-" + uuid.NewString()[:8]},
		Spec:       samplesv1alpha1.FooSpec{DeploymentName: "canary", Replicas: ptr.Int32(1)},
	}
	if _, err := foos.Create(ctx, canary, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer func() { _ = foos.Delete(context.WithoutCancel(ctx), canary.Name, metav1.DeleteOptions{}) }()

	replicas := int32(1)
	// step makes change number i, then watches for a second for its effect.
	step := func(change func(i int) error, done func() bool) error {
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
	deploymentHas := func() bool {
		d, err := deps.Get(ctx, "canary", metav1.GetOptions{})
		return err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas == replicas
	}
	err := step(func(int) error {
		replicas++
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		_, err := foos.Patch(ctx, canary.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}, deploymentHas)
	if err != nil {
		return fmt.Errorf("the Foo adapter delivers nothing: %w", err)
	}
	err = step(func(i int) error {
		// A different value each time: an unchanged object makes no event.
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, 40+i)
		_, err := deps.Patch(ctx, "canary", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}, deploymentHas)
	if err != nil {
		return fmt.Errorf("the Deployment adapter delivers nothing: %w", err)
	}
	return nil
}
