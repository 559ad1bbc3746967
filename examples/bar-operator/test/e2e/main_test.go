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

// Package e2e runs the example Bar operator through the real parts, as the
// Foo operator's e2e does: a loopback kube-apiserver, etcd and
// kube-controller-manager, the bar-reconciler binary under its
// ServiceAccount with exactly config/'s roles, and the real ApiServerSource
// adapters (Bars; ConfigMaps a Bar controls) delivering every event.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	examplev1alpha1 "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/apis/example/v1alpha1"
	"github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// operatorNamespace is config/'s namespace.
const operatorNamespace = "bar-operator"

// The manifests of config/ that a cluster without Knative can take.
var manifests = []string{"100-namespace.yaml", "200-serviceaccounts.yaml", "200-clusterroles.yaml", "200-roles.yaml",
	"201-clusterrolebindings.yaml", "201-rolebindings.yaml", "300-bar.yaml", "400-config-observability.yaml"}

var env struct {
	cp         *controlplane.ControlPlane
	kube       kubernetes.Interface
	bars       versioned.Interface
	url        string
	reconciler *controlplane.Process
	adapters   []*controlplane.Process
	bin        string
	port       int
	kubeconfig string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := up(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		if env.cp != nil {
			_ = env.cp.Stop()
			fmt.Fprintln(os.Stderr, "e2e: logs kept in", env.cp.Dir)
		}
		return 1
	}
	code := m.Run()
	if err := env.cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stopping:", err)
		code = 1
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "e2e: logs kept in", env.cp.Dir)
	} else {
		_ = os.RemoveAll(env.cp.Dir)
	}
	return code
}

func up() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{KeepDir: true, ControllerManager: true, AuditServiceAccounts: true})
	if err != nil {
		return err
	}
	env.cp = cp
	env.kube = kubernetes.NewForConfigOrDie(cp.RESTConfig)
	env.bars = versioned.NewForConfigOrDie(cp.RESTConfig)

	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	args := []string{"apply"}
	for _, f := range manifests {
		args = append(args, "-f", filepath.Join(root, "examples", "bar-operator", "config", f))
	}
	if err := localenv.Kubectl(ctx, cp, nil, args...); err != nil {
		return err
	}
	if err := localenv.Kubectl(ctx, cp, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/bars.example.frugal-operator.dev"); err != nil {
		return err
	}
	if env.kubeconfig, _, err = cp.KubeconfigForServiceAccount(ctx, operatorNamespace, "bar-reconciler", 0); err != nil {
		return err
	}
	sources, _, err := cp.KubeconfigForServiceAccount(ctx, operatorNamespace, "bar-sources", 0)
	if err != nil {
		return err
	}

	env.bin = filepath.Join(cp.Dir, "bar-reconciler")
	build := exec.CommandContext(ctx, "go", "build", "-o", env.bin, "./examples/bar-operator/cmd/bar-reconciler")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("failed to build the reconciler: %w\n%s", err, out)
	}
	if env.port, err = controlplane.FreePort(); err != nil {
		return err
	}
	env.url = "http://127.0.0.1:" + strconv.Itoa(env.port)
	if err := startReconciler(ctx); err != nil {
		return err
	}

	barGVR := schema.GroupVersionResource{Group: "example.frugal-operator.dev", Version: "v1alpha1", Resource: "bars"}
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for name, cfg := range map[string]controlplane.AdapterConfig{
		"bars": {AllNamespaces: true, Mode: "Resource", Resources: []controlplane.AdapterResource{{GVR: barGVR}}},
		"bar-configmaps": {AllNamespaces: true, Mode: "Resource",
			Resources: []controlplane.AdapterResource{{GVR: cmGVR, LabelSelector: "example.frugal-operator.dev/bar"}},
			Owner:     &controlplane.AdapterOwner{APIVersion: "example.frugal-operator.dev/v1alpha1", Kind: "Bar"}},
	} {
		p, err := cp.StartAdapter(name, operatorNamespace, env.url, cfg, sources)
		if err != nil {
			return err
		}
		env.adapters = append(env.adapters, p)
	}
	return waitForDelivery(ctx)
}

// startReconciler starts the reconciler, as a Knative revision would after a
// scale from zero, and waits until it is ready.
func startReconciler(ctx context.Context) error {
	cmd := exec.Command(env.bin, "--kubeconfig", env.kubeconfig, "--host", "127.0.0.1", "--port", strconv.Itoa(env.port))
	cmd.Env = append(os.Environ(), "SYSTEM_NAMESPACE="+operatorNamespace)
	p, err := env.cp.StartProcess("bar-reconciler", cmd)
	if err != nil {
		return err
	}
	env.reconciler = p
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("the reconciler exited: %s", p.LogTail())
		}
		resp, err := http.Get(env.url + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// waitForDelivery proves both adapters deliver: a canary Bar's data must
// reach its ConfigMap (the Bar adapter), and a hand-edited ConfigMap must be
// reverted (the ConfigMap adapter). An adapter sends nothing until its watch
// runs, so each change is repeated until its effect is seen.
func waitForDelivery(ctx context.Context) error {
	ns := operatorNamespace
	canary := &examplev1alpha1.Bar{ObjectMeta: metav1.ObjectMeta{Name: "canary"}, Spec: examplev1alpha1.BarSpec{Data: map[string]string{"n": "0"}}}
	if _, err := env.bars.ExampleV1alpha1().Bars(ns).Create(ctx, canary, metav1.CreateOptions{}); err != nil {
		return err
	}
	want := "0"
	holds := func() bool {
		cm, err := env.kube.CoreV1().ConfigMaps(ns).Get(ctx, "canary", metav1.GetOptions{})
		return err == nil && cm.Data["n"] == want && len(cm.Data) == 1
	}
	step := func(change func(i int) error) error {
		for i := 1; i < 120; i++ {
			if err := change(i); err != nil {
				return err
			}
			if wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Second, true,
				func(context.Context) (bool, error) { return holds(), nil }) == nil {
				return nil
			}
		}
		return errors.New("no effect within 2 minutes")
	}
	if err := step(func(i int) error {
		want = strconv.Itoa(i)
		_, err := env.bars.ExampleV1alpha1().Bars(ns).Patch(ctx, "canary", types.MergePatchType,
			[]byte(`{"spec":{"data":{"n":"`+want+`"}}}`), metav1.PatchOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("the Bar adapter delivers nothing: %w", err)
	}
	if err := step(func(i int) error {
		_, err := env.kube.CoreV1().ConfigMaps(ns).Patch(ctx, "canary", types.MergePatchType,
			[]byte(`{"data":{"extra":"`+strconv.Itoa(i)+`"}}`), metav1.PatchOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("the ConfigMap adapter delivers nothing: %w", err)
	}
	return nil
}

// namespace makes a namespace for one test, deleted when it ends.
func namespace(t *testing.T) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := env.kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return name
}

// eventually polls cond until it holds, failing the test after a minute
// with cond's last words.
func eventually(t *testing.T, what string, cond func(context.Context) (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		ok, why := cond(ctx)
		last = why
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within a minute: %s", what, last)
	}
}

// resync delivers PingSource's event and requires a 200: every Bar that
// needed work was reconciled.
func resync(t *testing.T) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, env.url, strings.NewReader(`{"resync":true}`))
	for k, v := range map[string]string{"Ce-Specversion": "1.0", "Ce-Id": strconv.FormatInt(time.Now().UnixNano(), 10),
		"Ce-Type": "dev.knative.sources.ping", "Ce-Source": "/apis/v1/namespaces/bar-operator/pingsources/bar-resync",
		"Content-Type": "application/json"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal("resync:", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resync answered %d, want 200", resp.StatusCode)
	}
}
