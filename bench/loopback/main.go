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

// Command loopback runs bench/harness and writes results.md and results.json
// into a results folder; hack/bench.sh runs it and draws the chart.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	cfg := harness.Config{Log: func(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }}
	ns := flag.String("n", "100,1000,5000", "Numbers of pre-existing Foos (and unrelated Deployments), comma-separated.")
	flag.IntVar(&cfg.Burst, "burst", 1000, "Foos created at once.")
	flag.IntVar(&cfg.RaisedQPS, "raised-qps", 200, "Every controller's client QPS (burst twice it).")
	flag.DurationVar(&cfg.Idle, "idle", 30*time.Second, "Idle CPU window.")
	flag.BoolVar(&cfg.SenderAuth, "sender-auth", true, "Run ours with sender authentication on (the adapters send OIDC tokens): what lets the adds of new Foos stand in for reads.")
	out := flag.String("out", filepath.Join("bench", "results", time.Now().UTC().Format("2006-01-02T15-04")), "Results folder.")
	flag.Parse()
	for _, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bad -n %q\n", *ns)
			os.Exit(2)
		}
		cfg.Ns = append(cfg.Ns, n)
	}
	if err := run(cfg, *out); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	fmt.Println("==> results in", *out)
}

// run runs the harness, its logs in a temporary folder kept if it fails, and
// writes what it measured into out, failed or not; it prints results.md.
func run(cfg harness.Config, out string) (err error) {
	if cfg.Dir, err = os.MkdirTemp("", "foo-bench-"); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := harness.Run(ctx, cfg)
	if err != nil {
		err = fmt.Errorf("%w (logs in %s)", err, cfg.Dir)
	} else {
		err = os.RemoveAll(cfg.Dir)
	}
	js, jsErr := json.MarshalIndent(rep, "", "  ")
	var md bytes.Buffer
	rep.WriteMarkdown(&md)
	fmt.Print(md.String())
	return errors.Join(err, jsErr, os.MkdirAll(out, 0o755),
		os.WriteFile(filepath.Join(out, "results.json"), js, 0o644), os.WriteFile(filepath.Join(out, "results.md"), md.Bytes(), 0o644))
}
