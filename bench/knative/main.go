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

// Command knative measures the operator on real Knative (the one-node
// cluster of hack/cluster) beside the classic informer-based
// k8s.io/sample-controller deployed on the same cluster as a pod, with its
// client raised to the reconciler's limit (200 requests/s, burst 400):
//
//   - the wake-up from zero: a Foo created while the reconciler has no pod,
//     to its Deployment existing (and, for scale, the same with a pod warm);
//   - the idle footprint with N Foos of each kind converged: pods, memory
//     (the kubelet's working set) and CPU over an idle window;
//   - a burst of Foos, to all of them converged: the classic through its
//     informers; ours through the Broker (config/broker/), in parallel.
//
// Foos ask for 0 replicas: a one-node cluster cannot run thousands of pods.
// hack/bench-knative.sh brings the cluster up, installs the operator and
// runs it; results go to bench/results/<time>-knative/results.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
)

const (
	system   = "foo-operator"
	service  = "foo-reconciler"
	classic  = "classic-sample-controller"
	registry = "localhost:5000"
)

var (
	classicGVR = schema.GroupVersionResource{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"}
	brokerGVR  = schema.GroupVersionResource{Group: "eventing.knative.dev", Version: "v1", Resource: "brokers"}

	kube kubernetes.Interface
	foos versioned.Interface
	dyn  dynamic.Interface
)

type results struct {
	WakeUps   []time.Duration `json:"wakeUps"`
	Warm      []time.Duration `json:"warm"`
	N         int             `json:"n"`
	Idle      time.Duration   `json:"idle"`
	IdleOurs  footprint       `json:"idleOurs"`
	IdleClass footprint       `json:"idleClassic"`
	Adapters  footprint       `json:"adapters"`
	Burst     int             `json:"burst"`
	BurstOurs time.Duration   `json:"burstOurs"`
	BurstCl   time.Duration   `json:"burstClassic"`
}

// footprint is what pods used over the idle window.
type footprint struct {
	Pods         int     `json:"pods"`
	PodSeconds   float64 `json:"podSeconds"`
	WorkingSetMi float64 `json:"workingSetMiB"`
	CPUMillis    float64 `json:"cpuMillicores"`
}

func main() {
	wakeups := flag.Int("wakeups", 10, "wake-ups from zero to time")
	n := flag.Int("n", 1000, "converged Foos of each kind during the idle window")
	idle := flag.Duration("idle", time.Minute, "the idle window")
	burst := flag.Int("burst", 1000, "Foos of each kind in the burst (0: no burst, and no switch to the broker wiring)")
	out := flag.String("out", "", "folder for results.md and results.json")
	flag.Parse()
	if err := run(*wakeups, *n, *idle, *burst, *out); err != nil {
		fmt.Fprintln(os.Stderr, "knative:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Printf("%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(wakeups, n int, idle time.Duration, burst int, out string) error {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join("_output", "cluster", "kubeconfig"))
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	kube, foos, dyn = kubernetes.NewForConfigOrDie(cfg), versioned.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
	r := results{N: n, Idle: idle, Burst: burst}

	// Every namespace first: each one made restarts the sources' adapters
	// (see docs/performance.md), and what happens before a new adapter lists is lost.
	for _, ns := range []string{"bench-wake", "bench-ours", "bench-classic", "burst-classic", "burst-ours"} {
		if err := namespace(ctx, ns); err != nil {
			return err
		}
	}
	if err := adaptersSettled(ctx, "burst-ours"); err != nil {
		return err
	}
	logf("wake-ups from zero: %d", wakeups)
	for i := range wakeups {
		if err := atZero(ctx); err != nil {
			return err
		}
		d, err := createAndTime(ctx, "bench-wake", fmt.Sprintf("cold-%02d", i))
		if err != nil {
			return err
		}
		logf("  from zero %d: %v", i+1, d)
		r.WakeUps = append(r.WakeUps, d)
		warm, err := createAndTime(ctx, "bench-wake", fmt.Sprintf("warm-%02d", i))
		if err != nil {
			return err
		}
		r.Warm = append(r.Warm, warm)
	}

	logf("the classic sample-controller as a pod")
	if err := classicAvailable(ctx); err != nil {
		return err
	}
	logf("%d Foos of each kind", n)
	if err := populate(ctx, "bench-ours", "bench-classic", n); err != nil {
		return err
	}
	logf("idle for %v", idle)
	if err := atZero(ctx); err != nil {
		return err
	}
	if r.IdleOurs, r.IdleClass, r.Adapters, err = measureIdle(ctx, idle); err != nil {
		return err
	}

	if burst == 0 {
		return write(r, out) // no burst, and the wiring left as it is
	}
	logf("burst of %d classic Foos", burst)
	if r.BurstCl, err = timeBurst(ctx, "burst-classic", burst, true); err != nil {
		return err
	}
	logf("  %v", r.BurstCl)
	logf("broker wiring: kubectl apply -f config/broker/")
	if err := brokerWiring(ctx); err != nil {
		return err
	}
	if err := atZero(ctx); err != nil {
		return err
	}
	logf("burst of %d Foos through the broker, from zero", burst)
	if r.BurstOurs, err = timeBurst(ctx, "burst-ours", burst, false); err != nil {
		return err
	}
	logf("  %v", r.BurstOurs)
	return write(r, out)
}

func namespace(ctx context.Context, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrs.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// adaptersSettled waits until the adapter runs, alone, with ns in its
// configuration.
func adaptersSettled(ctx context.Context, ns string) error {
	return poll(ctx, 5*time.Minute, "the adapters restarted", func(ctx context.Context) (bool, error) {
		deps, err := kube.AppsV1().Deployments(system).List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
		if err != nil || len(deps.Items) != adapters {
			return false, err
		}
		for _, d := range deps.Items {
			config := ""
			for _, e := range d.Spec.Template.Spec.Containers[0].Env {
				if e.Name == "K_SOURCE_CONFIG" {
					config = e.Value
				}
			}
			s := d.Status
			if !strings.Contains(config, `"`+ns+`"`) || s.ObservedGeneration != d.Generation || s.Replicas != 1 || s.UpdatedReplicas != 1 || s.AvailableReplicas != 1 {
				return false, nil
			}
		}
		n, _, err := pods(ctx, system, adapterSelector)
		return n == adapters, err
	})
}

// The adapters of config/'s ApiServerSources: one.
const (
	adapterSelector = "eventing.knative.dev/source=apiserver-source-controller"
	adapters        = 1
)

func poll(ctx context.Context, within time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, within, true, cond); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// atZero waits until no reconciler pod serves (a terminating one gets no
// requests).
func atZero(ctx context.Context) error {
	// Up to a ping's period and more: a ping wakes it for a minute.
	return poll(ctx, 10*time.Minute, "the reconciler at zero", func(ctx context.Context) (bool, error) {
		n, _, err := pods(ctx, system, "serving.knative.dev/service="+service)
		return n == 0, err
	})
}

// podsUntilGone names the pods that match the selector, terminating ones too.
func podsUntilGone(ctx context.Context, ns, selector string) ([]string, error) {
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names, nil
}

// pods counts the serving pods that match the selector and names them.
func pods(ctx context.Context, ns, selector string) (int, []string, error) {
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return 0, nil, err
	}
	var names []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return len(names), names, nil
}

func newFoo(ns, name string) *samplesv1alpha1.Foo {
	return &samplesv1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       samplesv1alpha1.FooSpec{DeploymentName: name, Replicas: ptr.Int32(0)},
	}
}

func newClassicFoo(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "samplecontroller.k8s.io/v1alpha1",
		"kind":       "Foo",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"deploymentName": name, "replicas": int64(0)},
	}}
}

// createAndTime creates one of our Foos and times it to its Deployment.
func createAndTime(ctx context.Context, ns, name string) (time.Duration, error) {
	start := time.Now()
	if _, err := foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, newFoo(ns, name), metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	err := poll(ctx, 3*time.Minute, "the Deployment of "+name, func(ctx context.Context) (bool, error) {
		_, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	return time.Since(start), err
}

// parallel runs f(0..n-1) on 32 workers and returns the first error.
func parallel(n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	work := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range work {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	return first
}

// create makes n Foos of one kind in ns.
func create(ctx context.Context, ns string, n int, isClassic bool) error {
	if err := namespace(ctx, ns); err != nil {
		return err
	}
	// A Foo there already (a run resumed) is left as it is.
	return parallel(n, func(i int) error {
		name := fmt.Sprintf("foo-%05d", i)
		var err error
		if isClassic {
			_, err = dyn.Resource(classicGVR).Namespace(ns).Create(ctx, newClassicFoo(ns, name), metav1.CreateOptions{})
		} else {
			_, err = foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, newFoo(ns, name), metav1.CreateOptions{})
		}
		if apierrs.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// converged tells whether all n Foos of ns have their Deployment and a status.
func converged(ctx context.Context, ns string, n int, isClassic bool) (bool, error) {
	deps, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil || len(deps.Items) < n {
		return false, err
	}
	done := 0
	if isClassic {
		list, err := dyn.Resource(classicGVR).Namespace(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		for _, u := range list.Items {
			if u.Object["status"] != nil {
				done++
			}
		}
	} else {
		list, err := foos.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		for _, f := range list.Items {
			if f.Status.ObservedGeneration == f.Generation {
				done++
			}
		}
	}
	return done == n, nil
}

func populate(ctx context.Context, oursNS, classicNS string, n int) error {
	if err := create(ctx, oursNS, n, false); err != nil {
		return err
	}
	if err := create(ctx, classicNS, n, true); err != nil {
		return err
	}
	for _, c := range []struct {
		ns        string
		isClassic bool
	}{{oursNS, false}, {classicNS, true}} {
		if err := poll(ctx, 15*time.Minute, c.ns+" converged", func(ctx context.Context) (bool, error) {
			return converged(ctx, c.ns, n, c.isClassic)
		}); err != nil {
			return err
		}
	}
	return nil
}

// timeBurst creates n Foos at once and times them to all converged.
func timeBurst(ctx context.Context, ns string, n int, isClassic bool) (time.Duration, error) {
	if err := namespace(ctx, ns); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := create(ctx, ns, n, isClassic); err != nil {
		return 0, err
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		return converged(ctx, ns, n, isClassic)
	})
	return time.Since(start), err
}

// classicAvailable waits for the classic controller's Deployment (applied by
// hack/bench-knative.sh) to be Available.
func classicAvailable(ctx context.Context) error {
	return poll(ctx, 3*time.Minute, "the classic controller Available", func(ctx context.Context) (bool, error) {
		d, err := kube.AppsV1().Deployments(classic).Get(ctx, classic, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return d.Status.AvailableReplicas == 1, nil
	})
}

// summary is the part of the kubelet's /stats/summary read here.
type summary struct {
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"podRef"`
		CPU struct {
			UsageCoreNanoSeconds uint64 `json:"usageCoreNanoSeconds"`
		} `json:"cpu"`
		Memory struct {
			WorkingSetBytes uint64 `json:"workingSetBytes"`
		} `json:"memory"`
	} `json:"pods"`
}

func stats(ctx context.Context) (map[string][2]uint64, error) {
	b, err := kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/onenode/proxy/stats/summary").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	out := map[string][2]uint64{}
	for _, p := range s.Pods {
		out[p.PodRef.Namespace+"/"+p.PodRef.Name] = [2]uint64{p.CPU.UsageCoreNanoSeconds, p.Memory.WorkingSetBytes}
	}
	return out, nil
}

// measureIdle watches the idle window: the reconciler's pods (sampled every
// second, each until it is gone; the ping wakes one every 5 minutes), their
// peak memory and the CPU they used, and the classic controller's and the
// adapters' memory and CPU.
func measureIdle(ctx context.Context, idle time.Duration) (ours, cl, adapters footprint, err error) {
	before, err := stats(ctx)
	if err != nil {
		return ours, cl, adapters, err
	}
	start := time.Now()
	used := map[string]uint64{} // each reconciler pod's CPU at its last sight
	for time.Since(start) < idle {
		// Every pod until it is gone: a terminating one (queue-proxy's
		// drain) holds its memory and its requests too.
		names, err := podsUntilGone(ctx, system, "serving.knative.dev/service="+service)
		if err != nil {
			return ours, cl, adapters, err
		}
		n := len(names)
		ours.Pods = max(ours.Pods, n)
		if n > 0 {
			ours.PodSeconds += float64(n)
			now, err := stats(ctx)
			if err != nil {
				return ours, cl, adapters, err
			}
			ws := 0.0
			for _, name := range names {
				if st, ok := now[system+"/"+name]; ok {
					used[name] = st[0]
					ws += float64(st[1]) / (1 << 20)
				}
			}
			ours.WorkingSetMi = max(ours.WorkingSetMi, ws)
		}
		time.Sleep(time.Second)
	}
	for _, cpu := range used {
		ours.CPUMillis += float64(cpu) / idle.Seconds() / 1e6
	}
	after, err := stats(ctx)
	if err != nil {
		return ours, cl, adapters, err
	}
	window := time.Since(start)
	sum := func(ns, selector string) (footprint, error) {
		_, names, err := pods(ctx, ns, selector)
		f := footprint{Pods: len(names), PodSeconds: float64(len(names)) * window.Seconds()}
		for _, name := range names {
			a, b := after[ns+"/"+name], before[ns+"/"+name]
			f.WorkingSetMi += float64(a[1]) / (1 << 20)
			f.CPUMillis += float64(a[0]-b[0]) / window.Seconds() / 1e6
		}
		return f, err
	}
	if cl, err = sum(classic, "app="+classic); err != nil {
		return ours, cl, adapters, err
	}
	adapters, err = sum(system, adapterSelector)
	return ours, cl, adapters, err
}

// brokerWiring applies config/broker/ and waits until the sources send to
// the Broker.
func brokerWiring(ctx context.Context) error {
	cmd := exec.Command(os.Getenv("KUBECTL"), "--kubeconfig", filepath.Join("_output", "cluster", "kubeconfig"), "apply", "-f", "config/broker/")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl apply -f config/broker/: %w", err)
	}
	return poll(ctx, 5*time.Minute, "the sources send to the Broker", func(ctx context.Context) (bool, error) {
		b, err := dyn.Resource(brokerGVR).Namespace(system).Get(ctx, "operators", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(b.Object, "status", "conditions")
		ready := false
		for _, c := range conds {
			if c, _ := c.(map[string]any); c["type"] == "Ready" && c["status"] == "True" {
				ready = true
			}
		}
		for _, name := range []string{"foos"} {
			s, err := dyn.Resource(schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1", Resource: "apiserversources"}).
				Namespace(system).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			sink, _, _ := unstructured.NestedString(s.Object, "status", "sinkUri")
			ready = ready && strings.Contains(sink, "broker-ingress")
		}
		return ready, nil
	})
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	// Nearest rank: of 10, p50 is the 5th and p99 the 10th.
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(i, 0)].Round(time.Millisecond)
}

func write(r results, out string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# On real Knative: the one-node cluster (hack/cluster), %s\n\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "| measure | this operator | classic sample-controller (a pod, 200 req/s) |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| wake-up from zero, create to Deployment (%d tries) | p50 %v, p99 %v | always on: no wake-up |\n", len(r.WakeUps), pct(r.WakeUps, 0.5), pct(r.WakeUps, 0.99))
	fmt.Fprintf(&b, "| pod warm, create to Deployment (%d tries) | p50 %v, p99 %v | |\n", len(r.Warm), pct(r.Warm, 0.5), pct(r.Warm, 0.99))
	fmt.Fprintf(&b, "| idle with N=%d Foos each, over %v: pod-seconds, each pod counted until it is gone | %.0f (pods woken by the ping) | %.0f |\n", r.N, r.Idle, r.IdleOurs.PodSeconds, r.IdleClass.PodSeconds)
	fmt.Fprintf(&b, "| idle: memory (working set) | %.1f MiB while a pod runs, else 0 | %.1f MiB |\n", r.IdleOurs.WorkingSetMi, r.IdleClass.WorkingSetMi)
	fmt.Fprintf(&b, "| idle: CPU, mean over the window | %.1f millicores | %.1f millicores |\n", r.IdleOurs.CPUMillis, r.IdleClass.CPUMillis)
	if r.Burst > 0 {
		fmt.Fprintf(&b, "| burst of %d Foos to all converged | %v (through the Broker, from zero) | %v |\n",
			r.Burst, r.BurstOurs.Round(time.Millisecond), r.BurstCl.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "\nAlways on besides, this operator's alone, not counted above: its ApiServerSource adapters' pods, %.1f MiB and %.1f millicores idle (%d pods).\n",
		r.Adapters.WorkingSetMi, r.Adapters.CPUMillis, r.Adapters.Pods)
	fmt.Print(b.String())
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "results.json"), js, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "results.md"), []byte(b.String()), 0o644)
}
