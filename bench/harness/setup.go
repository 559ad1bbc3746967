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
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// run is one N's control plane, with what every controller's measure needs.
type run struct {
	cfg  Config
	n    int
	cp   *controlplane.ControlPlane
	kube kubernetes.Interface
	dyn  dynamic.Interface
	// ourBin is our reconciler, built as ko builds it; port is where it
	// serves events.
	ourBin string
	port   int
	url    string
	// saKC and classicKC are the kubeconfigs of our reconciler's
	// ServiceAccount and of the classic's.
	saKC, classicKC string
	classic         map[string]string // name -> binary
	// adapters run for the whole of an N.
	adapters []*controlplane.Process
}

// setUp starts the control plane of an N, installs both controllers'
// CRDs and accounts, makes N Foos of each with their Deployments, starts
// the adapters and lets our reconciler write its Foos' status once.
func setUp(ctx context.Context, cfg Config, n int) (*run, error) {
	dir := filepath.Join(cfg.Dir, fmt.Sprintf("n%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg.Log("N=%d: starting etcd and kube-apiserver", n)
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: dir})
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, n: n, cp: cp, classic: map[string]string{}}
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.QPS, rc.Burst = 2000, 4000
	r.kube, r.dyn = kubernetes.NewForConfigOrDie(rc), dynamic.NewForConfigOrDie(rc)
	for _, step := range []func(context.Context) error{r.install, r.accounts, r.populate, r.startAdapters, r.settleOurs} {
		if err := step(ctx); err != nil {
			_ = cp.Stop()
			return nil, err
		}
	}
	return r, nil
}

// install applies config/ and the classic's CRD, and finds or builds the
// controllers' binaries.
func (r *run) install(ctx context.Context) error {
	if err := localenv.ApplyConfig(ctx, r.cp, localenv.Foo); err != nil {
		return err
	}
	crd, err := classicCRD()
	if err != nil {
		return err
	}
	if err := localenv.Kubectl(ctx, r.cp, nil, "apply", "-f", crd); err != nil {
		return err
	}
	if err := localenv.Kubectl(ctx, r.cp, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/foos.samplecontroller.k8s.io"); err != nil {
		return err
	}
	if r.classic["sample-controller-raised"], err = controlplane.BinaryPath("sample-controller-raised"); err != nil {
		return err
	}
	r.ourBin, err = localenv.BuildReconciler(ctx, localenv.Foo, filepath.Join(r.cfg.Dir, fmt.Sprintf("n%d", r.n)))
	return err
}

// accounts makes the kubeconfigs both controllers run with.
func (r *run) accounts(ctx context.Context) error {
	var err error
	if r.saKC, _, err = r.cp.KubeconfigForServiceAccount(ctx, localenv.Namespace, "foo-reconciler", 0); err != nil {
		return err
	}
	if r.classicKC, err = r.classicServiceAccount(ctx); err != nil {
		return err
	}
	if r.cfg.SenderAuth {
		return localenv.OIDCIdentities(ctx, r.kube, localenv.FoosIdentity, localenv.ResyncIdentity)
	}
	return nil
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

// startAdapters starts the Foo operator's adapter (config/600-sources.yaml's
// source, as a process) for the whole of the N, sending to our reconciler's
// port, with its OIDC identity's tokens under sender authentication.
func (r *run) startAdapters(ctx context.Context) error {
	var err error
	if r.port, err = controlplane.FreePort(); err != nil {
		return err
	}
	kc, _, err := r.cp.KubeconfigForServiceAccount(ctx, localenv.Namespace, "foo-sources", 0)
	if err != nil {
		return err
	}
	r.url = "http://127.0.0.1:" + strconv.Itoa(r.port)
	var env []string
	if r.cfg.SenderAuth {
		env = localenv.AdapterOIDCEnv(localenv.FoosIdentity)
	}
	p, err := r.cp.StartAdapter("foos", localenv.Namespace, r.url, localenv.FooSource, kc, env...)
	if err != nil {
		return err
	}
	r.adapters = append(r.adapters, p)
	return nil
}

// settleOurs lets our reconciler write its Foos' status once, as it would
// have long ago (not measured), then lets the adapter deliver the events
// of those writes before the measurements, which it would otherwise queue
// behind them (it delivers one event at a time).
func (r *run) settleOurs(ctx context.Context) error {
	r.cfg.Log("N=%d: settling our Foos' status (not measured)", r.n)
	p, err := r.startOurs(ctx, "settle")
	if err != nil {
		return err
	}
	defer func() { _ = p.Stop() }()
	if err := r.waitOursSettled(ctx, "bench", r.n); err != nil {
		return err
	}
	r.settle(ctx)
	return nil
}
