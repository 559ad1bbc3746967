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

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/frugal-operator/foo-operator/pkg/serverless/buckets"
	"github.com/frugal-operator/foo-operator/test/onenode"
)

// The operators' namespaces, the adapters' label, hack/release.sh's files
// and the bench's kustomization of the stream.
const (
	fooSystem, barSystem, streamNS, classicNS = "foo-operator", "bar-operator", "operator-stream", "classic-sample-controller"
	adapterKey, adapterValue                  = "eventing.knative.dev/source", "apiserver-source-controller"
	adapterSelector                           = adapterKey + "=" + adapterValue
	releaseBar, overlayDir                    = "_output/release/examples/bar-operator.yaml", "_output/stream-bench"
)

var (
	kubeconfig = onenode.Kubeconfig("")
	kube       kubernetes.Interface // in protobuf: the bench lists thousands of Deployments a second
	dyn        dynamic.Interface
)

// connect makes the clients of the one-node cluster.
func connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 500, 1000
	if dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	cfg.ContentType, cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf,application/json"
	kube, err = kubernetes.NewForConfig(cfg)
	return err
}

// knativeService names a Knative Service, whose pods scale to zero.
type knativeService struct{ ns, name string }

var (
	fooReconciler = knativeService{fooSystem, "foo-reconciler"}
	barReconciler = knativeService{barSystem, "bar-reconciler"}
	deadLetters   = knativeService{streamNS, "dead-letters"}
	streamKeeper  = knativeService{streamNS, "stream-keeper"}
)

func (s knativeService) selector() string { return "serving.knative.dev/service=" + s.name }
func (s knativeService) String() string   { return s.ns + "/" + s.name }

// wiring is how the Foos' events reach the Foo reconciler: from the adapter
// in adapterNS (alone: the only one in the cluster), to reconcilers.
type wiring struct {
	adapterNS   string
	alone       bool
	reconcilers []knativeService
}

var (
	directWiring = wiring{fooSystem, false, []knativeService{fooReconciler}}
	streamWiring = wiring{streamNS, true, []knativeService{fooReconciler, barReconciler}}
)

// poll asks cond every interval until it holds, for at most within.
func poll(ctx context.Context, every, within time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	if err := wait.PollUntilContextTimeout(ctx, every, within, true, cond); err != nil {
		return fmt.Errorf("waiting %v for %s: %w", within, what, err)
	}
	return nil
}

// steps runs each step in turn until one fails.
func steps(ctx context.Context, fs ...func(context.Context) error) error {
	for _, f := range fs {
		if err := f(ctx); err != nil {
			return err
		}
	}
	return nil
}

// kubectl is a step that runs hack/bench-knative.sh's kubectl ($KUBECTL).
func kubectl(args ...string) func(context.Context) error {
	return func(ctx context.Context) error {
		if os.Getenv("KUBECTL") == "" {
			return errors.New("KUBECTL is not set (hack/bench-knative.sh sets it)")
		}
		cmd := exec.CommandContext(ctx, os.Getenv("KUBECTL"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
		}
		return nil
	}
}

// ready is a step that waits until the object is Ready, of its generation.
func ready(ns, object string) func(context.Context) error {
	return kubectl("-n", ns, "wait", "--for=condition=Ready", "--timeout=5m", object)
}

// applyStream is a step that applies the stream with the members'
// Components, as a user does (test/knative's streamOverlay).
func applyStream(members ...string) func(context.Context) error {
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../release/operator-stream\ncomponents:\n"
	for _, m := range members {
		k += "- ../release/" + m + "\n"
	}
	return func(ctx context.Context) error {
		if err := errors.Join(os.MkdirAll(overlayDir, 0o755), os.WriteFile(overlayDir+"/kustomization.yaml", []byte(k), 0o644)); err != nil {
			return err
		}
		return kubectl("apply", "-k", overlayDir)(ctx)
	}
}

// switchToStream installs the example Bar operator and puts both operators
// on the shared stream as the Knative suite's TestBrokerWiring does.
func switchToStream(ctx context.Context) error {
	return steps(ctx, kubectl("apply", "-f", releaseBar), ready(barSystem, "ksvc/"+barReconciler.name),
		applyStream("foo-operator-stream", "examples/bar-operator-stream"),
		// The keeper's first pod makes the stream's source before it is ready.
		ready(streamNS, "broker/operators"), ready(streamNS, "ksvc/stream-keeper"), ready(streamNS, "apiserversource/operators"), ready(streamNS, "ksvc/"+deadLetters.name),
		kubectl("-n", streamNS, "rollout", "status", "deployment/stream-router", "--timeout=3m"),
		kubectl("-n", fooSystem, "delete", "--ignore-not-found", "apiserversource", "foos"),
		kubectl("-n", barSystem, "delete", "--ignore-not-found", "apiserversource", "bars"), streamWiring.delivers)
}

// podsOf lists the pods of ns ("" for all) that match selector, terminating
// ones too (they hold their memory and requests until gone), not finished
// ones (a Job's).
func podsOf(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}), nil
}

// atZero waits until the Services have no serving pod (an event then needs
// a new one); with gone, no pod at all (a pod drains for 30 s after its
// last request, holding its memory).
func atZero(ctx context.Context, gone bool, services ...knativeService) error {
	for _, s := range services {
		err := poll(ctx, 250*time.Millisecond, 10*time.Minute, s.String()+" at zero", func(ctx context.Context) (bool, error) {
			pods, err := podsOf(ctx, s.ns, s.selector())
			return err == nil && !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return gone || p.DeletionTimestamp == nil }), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// delivers waits until the wiring's adapter alone has rolled out with
// every bench namespace, then for a canary Foo (a new adapter may lose what
// happens before it lists: up to four).
func (w wiring) delivers(ctx context.Context) error {
	err := poll(ctx, time.Second, 5*time.Minute, "the adapter in "+w.adapterNS+" rolled out", func(ctx context.Context) (bool, error) {
		deps, err := kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
		if err != nil {
			return false, nil
		}
		pods, err := podsOf(ctx, "", adapterSelector)
		depsMine := slices.DeleteFunc(slices.Clone(deps.Items), func(d appsv1.Deployment) bool { return d.Namespace != w.adapterNS })
		podsMine := slices.DeleteFunc(slices.Clone(pods), func(p corev1.Pod) bool { return p.Namespace != w.adapterNS })
		others := len(pods) - len(podsMine) + len(deps.Items) - len(depsMine)
		return err == nil && len(depsMine) == 1 && rolledOut(&depsMine[0]) && lists(&depsMine[0], benchNamespaces...) &&
			len(podsMine) == 1 && (!w.alone || others == 0), nil
	})
	for try := 1; err == nil; try++ {
		if _, err = createAndTime(ctx, nsCanaries, "canary-"+strconv.FormatInt(time.Now().UnixNano(), 36), 2*time.Minute); err == nil {
			return nil
		} else if try < 4 {
			err = nil
		}
	}
	return fmt.Errorf("the adapter in %s does not deliver: %w", w.adapterNS, err)
}

// rolledOut tells whether the Deployment's one replica is its latest
// template's, available.
func rolledOut(d *appsv1.Deployment) bool {
	s := d.Status
	return s.ObservedGeneration == d.Generation && s.Replicas == 1 && s.UpdatedReplicas == 1 && s.AvailableReplicas == 1
}

// lists tells whether the adapter's configuration names every namespace.
func lists(d *appsv1.Deployment, namespaces ...string) bool {
	env := d.Spec.Template.Spec.Containers[0].Env
	i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "K_SOURCE_CONFIG" })
	return i >= 0 && !slices.ContainsFunc(namespaces, func(ns string) bool { return !strings.Contains(env[i].Value, strconv.Quote(ns)) })
}

// deploymentsSettled waits until the deployment controller has no backlog
// in the bench's namespaces: every Deployment's status is of its generation.
func deploymentsSettled(ctx context.Context) error {
	return poll(ctx, time.Second, 30*time.Minute, "every bench Deployment observed", func(ctx context.Context) (bool, error) {
		for _, ns := range benchNamespaces {
			deps, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil || slices.ContainsFunc(deps.Items, func(d appsv1.Deployment) bool { return d.Status.ObservedGeneration != d.Generation }) {
				return false, nil
			}
		}
		return true, nil
	})
}

// scaleOutPods is the most pods of the scaled-out bursts' reconciler, and
// scaleOutRole the Leases' Role they need.
const (
	scaleOutPods = 3
	scaleOutRole = "config/scale-out/200-buckets.yaml"
)

// scaleReconciler is a step that runs the Foo reconciler on least to most
// pods, as Knative's autoscaler decides between them: with most above one,
// the Leases' Role and BUCKETS at twice most, as docs/configuration.md
// says; with most one, as config/ has it, the Role and the Leases gone.
func scaleReconciler(least, most int) func(context.Context) error {
	return func(ctx context.Context) error {
		logf("the Foo reconciler on %d to %d pods", least, most)
		if most > 1 {
			if err := kubectl("apply", "-f", scaleOutRole)(ctx); err != nil {
				return err
			}
		}
		ksvcs := dyn.Resource(schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}).Namespace(fooSystem)
		svc, err := ksvcs.Get(ctx, fooReconciler.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		containers, _, _ := unstructured.NestedSlice(svc.Object, "spec", "template", "spec", "containers")
		c := containers[0].(map[string]any)
		env, _, _ := unstructured.NestedSlice(c, "env")
		env = slices.DeleteFunc(env, func(e any) bool { return e.(map[string]any)["name"] == "BUCKETS" })
		if most > 1 {
			env = append(env, map[string]any{"name": "BUCKETS", "value": strconv.Itoa(2 * most)})
		}
		c["env"] = env
		annotations, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "template", "metadata", "annotations")
		annotations["autoscaling.knative.dev/min-scale"] = strconv.Itoa(least)
		annotations["autoscaling.knative.dev/max-scale"] = strconv.Itoa(most)
		err = errors.Join(unstructured.SetNestedSlice(svc.Object, containers, "spec", "template", "spec", "containers"),
			unstructured.SetNestedStringMap(svc.Object, annotations, "spec", "template", "metadata", "annotations"))
		if err != nil {
			return err
		}
		if _, err := ksvcs.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if err := ready(fooSystem, "ksvc/"+fooReconciler.name)(ctx); err != nil || most > 1 {
			return err
		}
		return steps(ctx, kubectl("delete", "--ignore-not-found", "-f", scaleOutRole),
			kubectl("-n", fooSystem, "delete", "leases", "-l", buckets.LabelKey+"="+fooReconciler.name))
	}
}

// kind is a kind of object the bench makes: our Foo, the classic's, or the
// example Bar operator's Bar.
type kind string

const oursFoo, classicFoo, bar kind = "ours", "classic", "bar"

func (k kind) gvr() schema.GroupVersionResource {
	return map[kind]schema.GroupVersionResource{
		oursFoo:    {Group: "samplecontroller.knative.io", Version: "v1alpha1", Resource: "foos"},
		classicFoo: {Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"},
		bar:        {Group: "example.frugal-operator.dev", Version: "v1alpha1", Resource: "bars"},
	}[k]
}

// create makes an object of the kind; a Foo asks for 0 replicas.
func (k kind) create(ctx context.Context, ns, name string) error {
	kindName, spec := "Foo", map[string]any{"deploymentName": name, "replicas": int64(0)}
	if k == bar {
		kindName, spec = "Bar", map[string]any{"data": map[string]any{"greeting": "hello"}}
	}
	_, err := dyn.Resource(k.gvr()).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": k.gvr().GroupVersion().String(), "kind": kindName, "metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	}}, metav1.CreateOptions{})
	return err
}

// ensureNamespaces makes the bench's namespaces that do not exist.
func ensureNamespaces(ctx context.Context) error {
	for _, name := range benchNamespaces {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil && !apierrs.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// createAndTime creates one of our Foos and times it until its Deployment
// exists.
func createAndTime(ctx context.Context, ns, name string, within time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := oursFoo.create(ctx, ns, name); err != nil {
		return 0, err
	}
	err := poll(ctx, 50*time.Millisecond, within, "the Deployment of "+name, func(ctx context.Context) (bool, error) {
		_, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil, nil
	})
	return time.Since(start), err
}

// batch is objects of a kind in a namespace.
type batch struct {
	kind kind
	ns   string
}

// create makes n objects of the batch, 32 at a time; one there already (a
// run started again) is left as it is.
func (b batch) create(ctx context.Context, n int) error {
	var g errgroup.Group
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			if err := b.kind.create(ctx, b.ns, fmt.Sprintf("%.3s-%05d", b.kind.gvr().Resource, i)); !apierrs.IsAlreadyExists(err) {
				return err
			}
			return nil
		})
	}
	return g.Wait()
}

// populate is a step that makes n objects of each batch (a run before may
// have left more) and waits until all are reconciled.
func populate(n int, batches ...batch) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, b := range batches {
			logf("%d objects (%s) in %s", n, b.kind, b.ns)
			if err := b.create(ctx, n); err != nil {
				return err
			}
		}
		for _, b := range batches {
			err := poll(ctx, 2*time.Second, 20*time.Minute, "the objects of "+b.ns+" reconciled", func(ctx context.Context) (bool, error) {
				p, err := b.progress(ctx)
				return err == nil && p.objects >= n && p.reconciled == p.objects, nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// progress counts a batch's objects by how far they went (results.md says
// what each means).
type progress struct{ objects, reconciled, observed, ready int }

// progress counts from the API server's watch cache.
func (b batch) progress(ctx context.Context) (progress, error) {
	cached, deployments := metav1.ListOptions{ResourceVersion: "0"}, map[string]bool{}
	deps, err := kube.AppsV1().Deployments(b.ns).List(ctx, cached)
	if err != nil {
		return progress{}, err
	}
	list, err := dyn.Resource(b.kind.gvr()).Namespace(b.ns).List(ctx, cached)
	if err != nil {
		return progress{}, err
	}
	p := progress{objects: len(list.Items)}
	for _, d := range deps.Items {
		if deployments[d.Name] = true; d.Generation > 0 && d.Status.ObservedGeneration == d.Generation {
			p.observed++
		}
	}
	for _, u := range list.Items {
		name, _, _ := unstructured.NestedString(u.Object, "spec", "deploymentName")
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		if b.kind == classicFoo && u.Object["status"] != nil && deployments[name] || b.kind != classicFoo && observed == u.GetGeneration() {
			p.reconciled++
		}
		if b.kind == oursFoo && slices.ContainsFunc(conditions, func(c any) bool { m, _ := c.(map[string]any); return m["type"] == "Ready" && m["status"] == "True" }) {
			p.ready++
		}
	}
	return p, nil
}

// empty deletes the batch's objects, then their Deployments and ReplicaSets
// (rather than leave them to the garbage collector, at 20 requests/s), and
// waits until they are all gone.
func (b batch) empty(ctx context.Context) error {
	if p, err := b.progress(ctx); err != nil || p.objects == 0 {
		return err
	}
	logf("emptying %s", b.ns)
	all, apps := metav1.ListOptions{}, kube.AppsV1()
	if err := errors.Join(dyn.Resource(b.kind.gvr()).Namespace(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		apps.Deployments(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		apps.ReplicaSets(b.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)); err != nil {
		return err
	}
	return poll(ctx, 2*time.Second, 20*time.Minute, b.ns+" empty", func(ctx context.Context) (bool, error) {
		deps, err1 := kube.AppsV1().Deployments(b.ns).List(ctx, metav1.ListOptions{Limit: 1})
		sets, err2 := kube.AppsV1().ReplicaSets(b.ns).List(ctx, metav1.ListOptions{Limit: 1})
		p, err3 := b.progress(ctx)
		return errors.Join(err1, err2, err3) == nil && len(deps.Items)+len(sets.Items)+p.objects == 0, nil
	})
}
