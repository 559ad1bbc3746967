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
// Command memfloor prints what the reconciler's binary and its resident
// memory cost at rest, beside the floor that knative.dev/pkg's generated
// reconciler sets (./floor: the injection clients, an event recorder and a
// controller.Impl around the generated reconciler, serving nothing). Both
// are built as ko builds the reconciler and started idle, a few times each
// in turns; it prints each one's medians.
//
//	go run ./bench/memfloor
package main

import (
	"bufio"
	"context"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/frugal-operator/foo-operator/bench/harness"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// kubeconfig points at an address nothing listens on: neither binary reads
// the API server at rest (the reconciler runs without its cold-start resync).
const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`

// binary is one program measured.
type binary struct {
	name, pkg, path string
	args            []string
	// ready returns once the started process is ready.
	ready func(ctx context.Context, stdout *bufio.Scanner) error
	// rss, anon: the samples of VmRSS and RssAnon, in MiB.
	rss, anon []float64
}

func main() {
	runs := flag.Int("runs", 5, "Starts of each binary.")
	settle := flag.Duration("settle", 2*time.Second, "How long a process rests after it is ready before its memory is read.")
	flag.Parse()
	if err := run(*runs, *settle); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(runs int, settle time.Duration) error {
	ctx := context.Background()
	root, err := controlplane.RepoRoot()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "memfloor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(kubeconfig), 0o600); err != nil {
		return err
	}
	port, err := controlplane.FreePort()
	if err != nil {
		return err
	}
	bins := []*binary{
		{name: "floor", pkg: "./bench/memfloor/floor", args: []string{"--kubeconfig", kc}, ready: printsReady},
		{name: "foo-reconciler", pkg: "./cmd/foo-reconciler",
			args:  []string{"--kubeconfig", kc, "--cold-start-resync=false", "--host", "127.0.0.1", "--port", strconv.Itoa(port)},
			ready: answersReadyz(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))},
	}
	for _, b := range bins {
		b.path = filepath.Join(dir, b.name)
		if err := localenv.Build(ctx, root, b.pkg, b.path); err != nil {
			return err
		}
	}
	for range runs {
		for _, b := range bins {
			if err := b.measure(ctx, settle); err != nil {
				return fmt.Errorf("%s: %w", b.name, err)
			}
		}
	}
	fmt.Println("| binary | file MB | text MB | rodata MB | RSS at rest MiB | of which anonymous MiB |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, b := range bins {
		st, err := os.Stat(b.path)
		if err != nil {
			return err
		}
		text, rodata, err := segments(b.path)
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", b.name, mb(uint64(st.Size())), mb(text), mb(rodata), median(b.rss), median(b.anon))
	}
	return nil
}

// measure starts b, waits until it is ready and has rested, samples its
// memory and stops it.
func (b *binary) measure(ctx context.Context, settle time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.path, b.args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	if err := b.ready(ctx, bufio.NewScanner(stdout)); err != nil {
		return err
	}
	time.Sleep(settle)
	rss, _, anon, err := harness.RSS(cmd.Process.Pid)
	if err != nil {
		return err
	}
	b.rss, b.anon = append(b.rss, rss), append(b.anon, anon)
	return nil
}

// printsReady waits for the floor's "ready" line; the rest of its output is
// drained so that it never blocks on a full pipe.
func printsReady(_ context.Context, stdout *bufio.Scanner) error {
	for stdout.Scan() {
		if stdout.Text() == "ready" {
			go func() {
				for stdout.Scan() {
				}
			}()
			return nil
		}
	}
	return errors.New("exited before it was ready")
}

// answersReadyz polls url until it answers 200.
func answersReadyz(url string) func(context.Context, *bufio.Scanner) error {
	return func(ctx context.Context, stdout *bufio.Scanner) error {
		go func() {
			for stdout.Scan() {
			}
		}()
		for {
			resp, err := http.Get(url)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("not ready: %w", ctx.Err())
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// segments returns the sizes of an ELF binary's loaded code and read-only
// data.
func segments(path string) (text, rodata uint64, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		switch {
		case p.Flags&elf.PF_X != 0:
			text += p.Memsz
		case p.Flags&elf.PF_W == 0:
			rodata += p.Memsz
		}
	}
	return text, rodata, nil
}

func mb(n uint64) float64 { return float64(n) / 1e6 }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
