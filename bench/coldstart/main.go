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

// Command coldstart measures what a cold start of the reconciler costs with
// metrics and sender authentication on, against both off (and, with -base,
// against the binary of another revision): process start to ready, and to
// the first event answered (a Foo add, reconciled), on a loopback control
// plane. Variants run in turns, -runs times each; it prints p50 and p90.
//
//	go run ./bench/coldstart -runs 15 -base dbd1bd0
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
	"github.com/frugal-operator/foo-operator/test/otlp"
)

const (
	ns       = localenv.Namespace
	audience = "foo-reconciler.foo-operator"
)

// variant is a binary started one way.
type variant struct {
	name  string
	bin   string
	args  []string
	env   []string
	token bool // events carry a token
	ready []float64
	first []float64
}

func main() {
	runs := flag.Int("runs", 15, "Cold starts of each variant.")
	base := flag.String("base", "", "A revision whose binary is measured too, with metrics and auth off (as it was).")
	flag.Parse()
	if err := run(*runs, *base); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(runs int, base string) error {
	ctx := context.Background()
	cp, err := controlplane.Start(ctx, controlplane.Options{})
	if err != nil {
		return err
	}
	defer func() { _ = cp.Stop() }()
	kube := kubernetes.NewForConfigOrDie(cp.RESTConfig)
	foos := versioned.NewForConfigOrDie(cp.RESTConfig)
	if err := localenv.ApplyConfig(ctx, cp, localenv.Foo); err != nil {
		return err
	}
	kubeconfig, _, err := cp.KubeconfigForServiceAccount(ctx, ns, "foo-reconciler", 0)
	if err != nil {
		return err
	}
	bin, err := localenv.BuildReconciler(ctx, localenv.Foo, cp.Dir)
	if err != nil {
		return err
	}
	rcv, err := otlp.Start()
	if err != nil {
		return err
	}
	defer rcv.Close()
	if err := setup(ctx, kube, rcv.URL); err != nil {
		return err
	}
	subject := "system:serviceaccount:" + ns + ":foo-sources"
	oidc := []string{"--oidc-audience=" + audience, "--oidc-subjects=" + subject}
	on, off := "SYSTEM_NAMESPACE="+ns, "SYSTEM_NAMESPACE="
	loopback := []string{"--host", "127.0.0.1"}
	variants := []*variant{
		{name: "off", bin: bin, args: loopback, env: []string{off}},
		{name: "metrics", bin: bin, args: loopback, env: []string{on}},
		{name: "auth", bin: bin, args: slices.Concat(loopback, oidc), env: []string{off}, token: true},
		{name: "metrics+auth", bin: bin, args: slices.Concat(loopback, oidc), env: []string{on}, token: true},
	}
	if base != "" {
		baseBin, err := buildAt(ctx, cp.Dir, base)
		if err != nil {
			return err
		}
		b := &variant{name: "base " + base, bin: baseBin, env: []string{off}}
		// A revision older than --host listens on every interface.
		if help, _ := exec.CommandContext(ctx, baseBin, "-help").CombinedOutput(); strings.Contains(string(help), "-host") {
			b.args = loopback
		}
		variants = append([]*variant{b}, variants...)
	}
	tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "foo-sources",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{audience}}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	port, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	for i := range runs {
		for j, v := range variants {
			if err := v.measure(ctx, cp, foos, kubeconfig, port, url, tr.Status.Token, fmt.Sprintf("cs-%d-%d", j, i)); err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
		}
		fmt.Fprintf(os.Stderr, "run %d of %d done\n", i+1, runs)
	}
	if rcv.Exports() == 0 {
		return fmt.Errorf("the metrics variants exported nothing")
	}
	fmt.Printf("Cold start, %d runs each, milliseconds (p50 / p90):\n\n", runs)
	fmt.Println("| variant | start → ready | start → first event answered (reconciled) |")
	fmt.Println("|---|---|---|")
	for _, v := range variants {
		fmt.Printf("| %s | %.1f / %.1f | %.1f / %.1f |\n", v.name, pct(v.ready, 50), pct(v.ready, 90), pct(v.first, 50), pct(v.first, 90))
	}
	return nil
}

// setup points config-observability at the receiver (read only by the
// variants with SYSTEM_NAMESPACE).
func setup(ctx context.Context, kube kubernetes.Interface, endpoint string) error {
	data, _ := json.Marshal(map[string]any{"data": map[string]string{
		"metrics-protocol": "http/protobuf", "metrics-endpoint": endpoint, "metrics-export-interval": "10m"}})
	_, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "config-observability", types.MergePatchType, data, metav1.PatchOptions{})
	return err
}

// buildAt builds cmd/foo-reconciler as it was at rev.
func buildAt(ctx context.Context, dir, rev string) (string, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	wt := filepath.Join(dir, "base")
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "worktree", "add", "--detach", wt, rev).CombinedOutput(); err != nil {
		return "", fmt.Errorf("git worktree add %s: %w\n%s", rev, err, out)
	}
	defer func() { _ = exec.Command("git", "-C", root, "worktree", "remove", "--force", wt).Run() }()
	bin := filepath.Join(dir, "foo-reconciler-base")
	if err := localenv.Build(ctx, wt, "./cmd/foo-reconciler", bin); err != nil {
		return "", fmt.Errorf("building %s: %w", rev, err)
	}
	return bin, nil
}

// measure creates a Foo, starts the variant, waits until it is ready, sends
// the Foo's add event, and records when each happened; then stops it.
func (v *variant) measure(ctx context.Context, cp *controlplane.ControlPlane, foos versioned.Interface, kubeconfig string, port int, url, token, name string) error {
	foo := &samplesv1alpha1.Foo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: samplesv1alpha1.FooSpec{DeploymentName: name, Replicas: ptr.Int32(1)}}
	foo, err := foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, foo, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	foo.APIVersion, foo.Kind = samplesv1alpha1.SchemeGroupVersion.String(), "Foo"
	body, _ := json.Marshal(foo)
	cmd := exec.Command(v.bin, slices.Concat([]string{"--kubeconfig", kubeconfig, "--port", strconv.Itoa(port)}, v.args)...)
	cmd.Env = append(append(os.Environ(), "LOG_LEVEL=warn"), v.env...)
	start := time.Now()
	p, err := cp.StartProcess("reconciler-"+name, cmd)
	if err != nil {
		return err
	}
	defer func() { _ = p.Stop() }()
	err = wait.PollUntilContextTimeout(ctx, 500*time.Microsecond, time.Minute, true, func(context.Context) (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("exited: %s", p.LogTail())
		}
		resp, err := http.Get(url + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return err
	}
	v.ready = append(v.ready, ms(time.Since(start)))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	for k, val := range map[string]string{"Ce-Specversion": "1.0", "Ce-Id": name, "Ce-Source": cp.URL,
		"Ce-Type": "dev.knative.apiserver.resource.add", "Content-Type": "application/json"} {
		req.Header.Set(k, val)
	}
	if v.token {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the Foo's event was answered %d", resp.StatusCode)
	}
	v.first = append(v.first, ms(time.Since(start)))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// pct returns the p-th percentile (nearest rank).
func pct(xs []float64, p int) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := (p*len(s)+99)/100 - 1
	return s[max(i, 0)]
}
