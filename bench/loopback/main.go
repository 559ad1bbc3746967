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
	"os/exec"
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
	stockMaxN := flag.Int("stock-max-n", 100, "Largest N the stock classic (5 requests/s) runs at.")
	stockBurst := flag.Int("stock-burst", 100, "The stock classic's burst.")
	qps := flag.Int("raised-qps", 200, "The raised classic's client QPS (burst twice it).")
	idle := flag.Duration("idle", 30*time.Second, "Idle CPU window.")
	out := flag.String("out", "", "Results folder (default bench/results/<UTC time>).")
	profile := flag.Int("profile-seconds", 10, "Take CPU profiles over the first seconds of each burst (the API server's; our reconciler's and the adapters'), with their top functions; the harness waits for them (0: none).")
	profiles := flag.String("profiles", "", "Folder for the CPU profiles (default _output/profiles/<the results folder's name>: kept out of the results, which are committed).")
	senderAuth := flag.Bool("sender-auth", true, "Run ours with sender authentication on (the adapters send OIDC tokens): what lets the adds of new Foos stand in for reads.")
	flag.Parse()

	var cfg harness.Config
	for _, s := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bad -n %q\n", *ns)
			os.Exit(2)
		}
		cfg.Ns = append(cfg.Ns, n)
	}
	if *out == "" {
		*out = filepath.Join("bench", "results", time.Now().UTC().Format("2006-01-02T15-04"))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	work, err := os.MkdirTemp("", "foo-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cfg.Burst, cfg.StockMaxN, cfg.StockBurst, cfg.RaisedQPS, cfg.Idle, cfg.Dir = *burst, *stockMaxN, *stockBurst, *qps, *idle, work
	cfg.SenderAuth = *senderAuth
	cfg.Log = func(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }
	if *profile > 0 {
		if *profiles == "" {
			*profiles = filepath.Join("_output", "profiles", filepath.Base(*out))
		}
		if err := os.MkdirAll(*profiles, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		cfg.Profiles, cfg.ProfileSeconds = *profiles, *profile
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, runErr := harness.Run(ctx, cfg)
	if rep != nil {
		if err := rep.WriteJSON(filepath.Join(*out, "results.json")); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		f, err := os.Create(filepath.Join(*out, "results.md"))
		if err == nil {
			rep.WriteMarkdown(f)
			f.Close()
			rep.WriteMarkdown(os.Stdout)
		}
	}
	if *profile > 0 {
		if err := topOfProfiles(*profiles); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if runErr != nil {
		fmt.Fprintln(os.Stderr, "error:", runErr, "(logs in", work+")")
		os.Exit(1)
	}
	_ = os.RemoveAll(work)
	fmt.Println("==> results in", *out)
	if *profile > 0 {
		fmt.Println("==> CPU profiles in", *profiles)
	}
}

// topOfProfiles writes, beside each CPU profile in dir, its top functions by
// cumulative time (<profile>.txt), as go tool pprof prints them.
func topOfProfiles(dir string) error {
	profiles, err := filepath.Glob(filepath.Join(dir, "*.pprof"))
	if err != nil {
		return err
	}
	for _, p := range profiles {
		top, err := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=40", p).Output()
		if err != nil {
			return fmt.Errorf("go tool pprof %s: %w", p, err)
		}
		if err := os.WriteFile(strings.TrimSuffix(p, ".pprof")+".txt", top, 0o644); err != nil {
			return err
		}
	}
	return nil
}
