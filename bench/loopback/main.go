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

// Command loopback runs bench/harness: this project's reconciler beside
// the classic informer-based sample-controller on one loopback API server,
// and writes results.md and results.json into a results folder. Use
// hack/bench.sh, which builds the tools and draws the chart.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/frugal-operator/foo-operator/bench/harness"
)

func main() {
	ns := flag.String("n", "100,1000,5000", "Numbers of pre-existing Foos (and unrelated Deployments), comma-separated.")
	burst := flag.Int("burst", 1000, "Foos created at once.")
	qps := flag.Int("raised-qps", 200, "The raised classic's client QPS (burst twice it).")
	idle := flag.Duration("idle", 30*time.Second, "Idle CPU window.")
	out := flag.String("out", "", "Results folder (default bench/results/<UTC time>).")
	senderAuth := flag.Bool("sender-auth", true, "Run ours with sender authentication on (the adapters send OIDC tokens): what lets the adds of new Foos stand in for reads.")
	flag.Parse()

	cfg := harness.Config{Burst: *burst, RaisedQPS: *qps, Idle: *idle, SenderAuth: *senderAuth,
		Log: func(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }}
	var err error
	if cfg.Ns, err = parseNs(*ns); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *out == "" {
		*out = filepath.Join("bench", "results", time.Now().UTC().Format("2006-01-02T15-04"))
	}
	if err := run(cfg, *out); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	fmt.Println("==> results in", *out)
}

// parseNs reads -n: positive numbers separated by commas.
func parseNs(s string) ([]int, error) {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad -n %q", s)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// run runs the harness, its logs in a temporary folder kept if it fails,
// and writes what it measured into out, failed or not.
func run(cfg harness.Config, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "foo-bench-")
	if err != nil {
		return err
	}
	cfg.Dir = work
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, runErr := harness.Run(ctx, cfg)
	if rep != nil {
		if err := write(rep, out); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if runErr != nil {
		return fmt.Errorf("%w (logs in %s)", runErr, work)
	}
	return os.RemoveAll(work)
}

// write writes results.json and results.md into out, and prints results.md.
func write(rep *harness.Report, out string) error {
	if err := rep.WriteJSON(filepath.Join(out, "results.json")); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(out, "results.md"))
	if err != nil {
		return err
	}
	rep.WriteMarkdown(f)
	rep.WriteMarkdown(os.Stdout)
	return f.Close()
}
