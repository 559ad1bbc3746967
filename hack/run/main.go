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

// Command run runs the operator end to end on this machine (see
// test/localenv): a loopback control plane, config/'s CRD and RBAC, the
// reconciler under its ServiceAccount, a real ApiServerSource adapter and
// a resync timer standing in for PingSource. It applies the sample Foo,
// prints what the reconciler made of it and, unless --once, keeps running
// until Ctrl-C. Use hack/run.sh, which builds the tools first.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

func main() {
	once := flag.Bool("once", false, "Run, print, and exit (non-interactive, for CI).")
	resync := flag.Duration("resync-interval", time.Hour, "How often to send the resync event, as the PingSource would (config/600-sources.yaml: hourly).")
	flag.Parse()
	if err := run(*once, *resync); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(once bool, resyncEvery time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "_output", "run")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	say := func(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }
	start := time.Now()
	env, err := localenv.Up(ctx, localenv.Foo, localenv.Options{Dir: dir, Progress: say})
	if err != nil {
		return err
	}
	foos, err := versioned.NewForConfig(env.Config)
	if err != nil {
		return err
	}
	defer func() {
		say("Stopping everything")
		if err := env.Down(); err != nil {
			fmt.Fprintln(os.Stderr, "error stopping:", err)
		}
	}()
	say("Up in %.1fs; logs in %s", time.Since(start).Seconds(), dir)

	kubectl, _ := controlplane.BinaryPath("kubectl")
	say("kubectl apply -f config/samples/example-foo.yaml")
	if err := env.Kubectl(ctx, os.Stdout, "apply", "-f", filepath.Join(root, "config/samples/example-foo.yaml")); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		f, err := foos.SamplecontrollerV1alpha1().Foos("default").Get(ctx, "example-foo", metav1.GetOptions{})
		return err == nil && f.Status.ObservedGeneration == f.Generation, nil
	})
	if err != nil {
		return fmt.Errorf("the sample Foo was not reconciled: %w", err)
	}
	say("What the reconciler made of it:")
	for _, args := range [][]string{
		{"get", "-n", "default", "foos,deployments", "-o", "wide"},
		{"get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Foo"},
	} {
		if err := env.Kubectl(ctx, os.Stdout, args...); err != nil {
			return err
		}
	}
	foo, err := foos.SamplecontrollerV1alpha1().Foos("default").Get(ctx, "example-foo", metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("Foo default/example-foo status: observedGeneration=%d availableReplicas=%d\n",
		foo.Status.ObservedGeneration, foo.Status.AvailableReplicas)
	for _, c := range foo.Status.Conditions {
		fmt.Printf("  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	fmt.Println("(Nothing runs pods here, so the Deployment never becomes available: Ready stays Unknown.)")
	if once {
		return nil
	}
	say("Keep playing (Ctrl-C stops everything):")
	fmt.Printf("    %s --kubeconfig %s get foos -A\n", kubectl, env.CP.AdminKubeconfig)
	tick := time.NewTicker(resyncEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if _, err := env.Resync(ctx); err != nil {
				say("Resync: %v", err)
			} else {
				say("Resync: every Foo that needed work reconciled")
			}
		}
	}
}
