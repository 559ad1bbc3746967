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
// Package knative proves the operator on real Knative: a one-node cluster
// (hack/cluster/up.sh) with Knative Serving and Eventing, the operator
// installed as users install it (its release YAML, kubectl apply'd over the
// previous commit's release), and Foos managed
// through the real ApiServerSource and PingSource adapters, the activator,
// queue-proxy and the autoscaler. TestMain brings the cluster up when it is
// not (and down again after), then installs and upgrades the operator. The tests run in
// the order of their files: direct_test.go and ping_test.go with the sources
// wired straight to the reconciler, then viabroker_test.go, which switches to
// the broker wiring for good.
package knative

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	fooclient "github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/onenode"
)

// The operator as config/ installs it.
const (
	system  = "foo-operator"
	service = "foo-reconciler"
)

var (
	root       = repoRoot()
	kubeconfig = onenode.Kubeconfig(root)

	kube    kubernetes.Interface
	foos    fooclient.Interface
	dyn     dynamic.Interface
	ksvcGVR = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("knative: skipped in -short mode")
		return 0
	}
	// up.sh does nothing when the cluster is up already; it is stopped again
	// only if this run started it.
	wasUp := clusterUp()
	if err := command("hack/cluster/up.sh").Run(); err != nil {
		fmt.Fprintln(os.Stderr, "knative: hack/cluster/up.sh:", err)
		return 1
	}
	if !wasUp {
		defer func() {
			if err := command("hack/cluster/down.sh").Run(); err != nil {
				fmt.Fprintln(os.Stderr, "knative: hack/cluster/down.sh:", err)
			}
		}()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg.QPS, cfg.Burst = 200, 400
	kube, foos, dyn = kubernetes.NewForConfigOrDie(cfg), fooclient.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
	// On a cluster an earlier run used, the upgrade's Foos of that run go
	// first: the previous release makes them again.
	if err := namespaceGone(upgraded); err != nil {
		fmt.Fprintln(os.Stderr, "knative:", err)
		return 1
	}
	// Made first, so that installing does not restart the adapters for them.
	for _, name := range []string{canaries, upgraded} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrs.IsAlreadyExists(err) {
			fmt.Fprintln(os.Stderr, "knative:", err)
			return 1
		}
	}
	// As users upgrade: the previous commit's release, Foos under it, then
	// this release over it (TestUpgradeKeepsEveryFoo checks the Foos).
	if err := installPrevious(); err != nil {
		fmt.Fprintln(os.Stderr, "knative: installing the previous commit's release:", err)
		return 1
	}
	if err := foosBeforeTheUpgrade(); err != nil {
		fmt.Fprintln(os.Stderr, "knative: Foos under the previous release:", err)
		return 1
	}
	if err := install(); err != nil {
		fmt.Fprintln(os.Stderr, "knative: installing the operator:", err)
		return 1
	}
	if err := foosDuringTheUpgrade(); err != nil {
		fmt.Fprintln(os.Stderr, "knative: Foos during the upgrade:", err)
		return 1
	}
	// What this release's accounts do is read from here on: the previous
	// release's adapter, gone once the new one runs alone, had its own rules.
	if err := clustertest.Poll(3*time.Minute, "the adapter of this release alone", func(ctx context.Context) (bool, string) {
		return adaptersRolledOut(ctx, "")
	}); err != nil {
		fmt.Fprintln(os.Stderr, "knative:", err)
		return 1
	}
	if auditFrom, err = controlplane.AuditLogEnd(auditLog); err != nil {
		fmt.Fprintln(os.Stderr, "knative:", err)
		return 1
	}
	return m.Run()
}

// namespaceGone deletes the namespace, if it exists, and waits until it is
// gone.
func namespaceGone(name string) error {
	err := kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	if apierrs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return clustertest.Poll(5*time.Minute, "namespace "+name+" gone", func(ctx context.Context) (bool, string) {
		_, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return apierrs.IsNotFound(err), fmt.Sprint(err)
	})
}

// clusterUp tells whether the cluster answers.
func clusterUp() bool {
	return exec.Command(tool("kubectl"), "--kubeconfig", kubeconfig, "get", "--raw", "/readyz").Run() == nil
}

// command runs a script of the repository with its output on the test's.
func command(script string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(root, script), args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stdout, os.Stderr
	return cmd
}

// kubectl runs kubectl on the cluster, from the repository's root.
func kubectl(args ...string) error {
	cmd := exec.Command(tool("kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stdout, os.Stderr
	return cmd.Run()
}

// tool is the path of a binary hack/build-tools.sh built.
func tool(name string) string {
	out, err := exec.Command(filepath.Join(root, "hack", "build-tools.sh"), "--path", name).Output()
	if err != nil {
		panic(fmt.Sprintf("hack/build-tools.sh --path %s: %v", name, err))
	}
	return strings.TrimSpace(string(out))
}

// install installs the operator as its users do (hack/cluster/install.sh):
// hack/release.sh builds the release into the cluster's registry, and
// kubectl applies its YAML, whose every image is named by digest.
func install() error {
	start := time.Now()
	if err := command("hack/cluster/install.sh").Run(); err != nil {
		return fmt.Errorf("kubectl apply -f %s: %w", release, err)
	}
	// The upgrade step CHANGELOG.md names: one source now does what two did.
	if err := kubectl("-n", system, "delete", "--ignore-not-found", "apiserversource", "foo-deployments"); err != nil {
		return err
	}
	fmt.Printf("knative: release made and applied in %v\n", time.Since(start).Round(time.Millisecond))
	for _, file := range []string{release, releaseBar, "_output/release/operator-stream/operator-stream.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(b), "\n") {
			if image, ok := strings.CutPrefix(strings.TrimSpace(l), "image: "); ok && !strings.Contains(image, "@sha256:") {
				return fmt.Errorf("%s: image %s is not named by digest", file, image)
			}
		}
	}
	return nil
}

// auditLog is the cluster's audit log (hack/cluster/up.sh), and auditFrom
// where this release's requests begin in it.
var (
	auditLog  = onenode.AuditLog(root)
	auditFrom int64
)

// The release's file (hack/release.sh), from the repository's root.
const release = "_output/release/foo-operator.yaml"

// namespace makes a namespace for one test and deletes it afterwards, and
// returns once the sources deliver again: ApiServerSource passes its adapter
// the list of namespaces even when it watches all of them, so each namespace
// made or deleted restarts the adapters, and what changes before a new
// adapter's first list is never sent (the resync restores it in the product).
func namespace(t *testing.T) string {
	t.Helper()
	ns := clustertest.Namespace(t, kube, "knative-e2e-")
	sourcesDeliver(t, ns)
	return ns
}

// sourcesDeliver waits until the adapter runs with ns in its
// configuration, alone (the rollout done), then until a canary Foo (in a
// namespace of its own, created by TestMain) is reconciled: the new adapter
// watches. A canary lost in the adapter's restart is made again.
func sourcesDeliver(t *testing.T, ns string) {
	t.Helper()
	clustertest.Eventually(t, 3*time.Minute, "the adapters restarted with namespace "+ns, func(ctx context.Context) (bool, string) {
		return adaptersRolledOut(ctx, ns)
	})
	aCanaryReconciled(t, ns, 4)
}

// aCanaryReconciled makes a canary Foo (its name tagged), and another every
// 30 s, until one is reconciled, at most tries of them: one whose event was
// lost is made again.
func aCanaryReconciled(t *testing.T, tag string, tries int) {
	t.Helper()
	for try := 1; ; try++ {
		name := fmt.Sprintf("canary-%s-%d", tag, canariesMade.Add(1))
		createFoo(t, newFoo(canaries, name, name, 0))
		err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := kube.AppsV1().Deployments(canaries).Get(ctx, name, metav1.GetOptions{})
			return err == nil, nil
		})
		if err == nil {
			return
		}
		if try == tries {
			t.Fatalf("%d canary Foos were never reconciled: the sources do not deliver", tries)
		}
	}
}

// adaptersRolledOut tells whether the adapters run alone, their rollouts
// done, with the namespace ns in their configuration (any, if "").
func adaptersRolledOut(ctx context.Context, ns string) (bool, string) {
	deps, err := kube.AppsV1().Deployments(adapterNamespace).List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
	if err != nil {
		return false, err.Error()
	}
	if len(deps.Items) != adapters {
		return false, fmt.Sprintf("%d adapter Deployments, want %d", len(deps.Items), adapters)
	}
	for _, d := range deps.Items {
		config := ""
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "K_SOURCE_CONFIG" {
				config = e.Value
			}
		}
		if ns != "" && !strings.Contains(config, strconv.Quote(ns)) {
			return false, d.Name + " does not list " + ns + " yet"
		}
		s := d.Status
		if s.ObservedGeneration != d.Generation || s.Replicas != 1 || s.UpdatedReplicas != 1 || s.AvailableReplicas != 1 {
			return false, fmt.Sprintf("%s rolling out: %+v", d.Name, s)
		}
	}
	pods, err := kube.CoreV1().Pods(adapterNamespace).List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
	if err != nil {
		return false, err.Error()
	}
	return len(pods.Items) == adapters, fmt.Sprintf("%d adapter pods, want %d", len(pods.Items), adapters)
}

// adapterSelector selects the ApiServerSources' adapters, of which config/
// makes one, and so does the shared stream.
const (
	adapterSelector = "eventing.knative.dev/source=apiserver-source-controller"
	adapters        = 1
)

// adapterNamespace is where the adapter that sends the Foos' events runs:
// the operator's own (direct wiring), or the shared stream's
// (TestBrokerWiring).
var adapterNamespace = system

// canaries is the namespace of the canary Foos (see sourcesDeliver).
const canaries = "e2e-canaries"

// canariesMade numbers the canary Foos: a namespace's adapter may be waited
// for more than once.
var canariesMade atomic.Int64

func newFoo(ns, name, deployment string, replicas int32) *samplesv1alpha1.Foo {
	return &samplesv1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       samplesv1alpha1.FooSpec{DeploymentName: deployment, Replicas: ptr.Int32(replicas)},
	}
}

func createFoo(t *testing.T, f *samplesv1alpha1.Foo) {
	t.Helper()
	if _, err := foos.SamplecontrollerV1alpha1().Foos(f.Namespace).Create(context.Background(), f, metav1.CreateOptions{}); err != nil {
		t.Fatal("creating Foo:", err)
	}
}

// servingPods counts the pods of Knative Service ns/ksvc that are not being deleted:
// a pod that terminates gets no more requests, so an event that arrives
// then needs a new pod, as at zero.
func servingPods(ctx context.Context, ns, ksvc string) (int, error) {
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=" + ksvc})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			n++
		}
	}
	return n, nil
}

// atZero waits until Knative Service ns/ksvc has scaled to zero pods, and
// stayed there for 10 s: for the reconciler, 30 s without events (its
// window, config/500-reconciler.yaml), then the autoscaler's grace period.
// The 10 s let a wake already on its way show (the resync that a source's
// new adapter asks for comes a moment after the adapter's rollout).
func atZero(t *testing.T, ns, ksvc string) {
	t.Helper()
	var since time.Time
	clustertest.Eventually(t, 5*time.Minute, ksvc+" at zero pods for 10 s", func(ctx context.Context) (bool, string) {
		n, err := servingPods(ctx, ns, ksvc)
		if err != nil {
			return false, err.Error()
		}
		if n != 0 {
			since = time.Time{}
			return false, fmt.Sprintf("%d pods", n)
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= 10*time.Second, fmt.Sprintf("at zero for %v", time.Since(since).Round(time.Second))
	})
}

// reconcilerEnv returns the env of the reconciler's container in its
// Service's template.
func reconcilerEnv(t *testing.T) []any {
	t.Helper()
	svc, err := dyn.Resource(ksvcGVR).Namespace(system).Get(context.Background(), service, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(svc.Object, "spec", "template", "spec", "containers")
	env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
	return env
}

// setReconciler sets, in the reconciler's Service's template, its
// container's env and the autoscaling annotations scale holds (min-scale,
// max-scale: their values).
func setReconciler(t *testing.T, env []any, scale map[string]string) {
	t.Helper()
	ops := []map[string]any{{"op": "replace", "path": "/spec/template/spec/containers/0/env", "value": env}}
	for name, value := range scale {
		ops = append(ops, map[string]any{"op": "replace", "path": "/spec/template/metadata/annotations/autoscaling.knative.dev~1" + name, "value": value})
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(ksvcGVR).Namespace(system).Patch(context.Background(), service, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// ready tells whether the object's Ready condition is True.
func ready(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (bool, string) {
	u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	return readyOf(u)
}

// readyOf tells whether u's Ready condition is True, of its generation.
func readyOf(u *unstructured.Unstructured) (bool, string) {
	// A Ready of an older generation says nothing of the change just made
	// (a new revision's env, a source's sink).
	if observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); observed != u.GetGeneration() {
		return false, fmt.Sprintf("generation %d not observed yet (%d is)", u.GetGeneration(), observed)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if c, _ := c.(map[string]any); c["type"] == "Ready" {
			return c["status"] == "True", fmt.Sprintf("Ready=%v %v: %v", c["status"], c["reason"], c["message"])
		}
	}
	return false, "no Ready condition"
}
