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

// Package scaleout proves that several reconciler processes behind one
// address, as a Knative Service's pods behind its activator and
// queue-proxies, share the work with every guarantee of one: each key
// reconciled in one process at a time, every event answered only once its
// keys are reconciled wherever they are held, nothing lost when a process
// is killed or stopped mid-burst. On the real parts of test/e2e: a loopback
// kube-apiserver, etcd and kube-controller-manager, the real
// ApiServerSource adapter, the reconciler binary with --buckets.
package scaleout

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// processes is how many reconciler processes share the keys, and buckets
// how many buckets they share.
const (
	processes = 3
	buckets   = 6
)

// bucketsManifest grants the Leases (config/scale-out).
const bucketsManifest = "config/scale-out/200-buckets.yaml"

var env struct {
	*localenv.Env
	Foos  versioned.Interface
	front *front
	procs []*proc
}

// proc is one reconciler process: a pod of the Service.
type proc struct {
	name   string
	port   int
	starts int
	mu     sync.Mutex
	p      *controlplane.Process
	// logs are the log files of each of its starts.
	logs []string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("scaleout: skipped in -short mode")
		return 0
	}
	op := localenv.Foo
	op.Manifests = append(slices.Clip(op.Manifests), bucketsManifest)
	e, err := localenv.UpForTests(op)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scaleout:", err)
		return 1
	}
	env.Env, env.Foos = e, versioned.NewForConfigOrDie(e.Config)
	if err := scaleOut(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "scaleout:", err)
		return e.Finish(1)
	}
	code := m.Run()
	for _, p := range env.procs {
		p.stop()
	}
	_ = env.front.Close()
	return e.Finish(code)
}

// scaleOut replaces the one reconciler by processes of them behind a
// front on its address, where the adapters deliver.
func scaleOut(ctx context.Context) error {
	if err := env.StopReconciler(); err != nil {
		return err
	}
	env.front = &front{}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(env.Port()))
	if err != nil {
		return err
	}
	env.front.Server = &http.Server{Handler: env.front, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = env.front.Serve(ln) }()
	for i := range processes {
		port, err := controlplane.FreePort()
		if err != nil {
			return err
		}
		p := &proc{name: fmt.Sprintf("reconciler-%c", 'a'+i), port: port}
		env.procs = append(env.procs, p)
		env.front.add("127.0.0.1:" + strconv.Itoa(port))
		if err := p.start(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (p *proc) start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts++
	name := fmt.Sprintf("%s-%d", p.name, p.starts)
	proc, err := env.StartReconcilerAt(ctx, name, p.port, "--buckets="+strconv.Itoa(buckets))
	if proc != nil {
		p.p = proc
		p.logs = append(p.logs, proc.LogPath)
	}
	return err
}

// kill crashes the process (SIGKILL).
func (p *proc) kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.p.Kill()
	p.p = nil
	return err
}

// stop stops the process (SIGTERM), as Knative does when it scales down.
func (p *proc) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p != nil {
		_ = p.p.Stop()
		p.p = nil
	}
}

// front spreads requests round the processes, as a Knative Service's
// activator and queue-proxies spread them round its pods; a process that
// is down answers 502 through it, as a pod being replaced does.
type front struct {
	*http.Server
	mu       sync.Mutex
	backends []*url.URL
	next     int
}

func (f *front) add(hostport string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.backends = append(f.backends, &url.URL{Scheme: "http", Host: hostport})
}

func (f *front) pick() *url.URL {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.backends[f.next%len(f.backends)]
	f.next++
	return u
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(f.pick()) }}
	rp.ServeHTTP(w, r)
}
