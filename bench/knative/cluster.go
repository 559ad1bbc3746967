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

	"github.com/frugal-operator/foo-operator/test/onenode"
)

// The operators' namespaces, the adapters' label, and files: the releases
// and the members' kustomize Components (hack/cluster/install.sh runs
// hack/release.sh), and the bench's kustomization of the stream.
const (
	fooSystem, barSystem, streamNS, classicNS = "foo-operator", "bar-operator", "operator-stream", "classic-sample-controller"
	adapterKey, adapterValue                  = "eventing.knative.dev/source", "apiserver-source-controller"
	adapterSelector                           = adapterKey + "=" + adapterValue
	releaseFoo, releaseBar, overlayDir        = "_output/release/foo-operator.yaml", "_output/release/examples/bar-operator.yaml", "_output/stream-bench"
)

var (
	kubeconfig = onenode.Kubeconfig("")
	kube       kubernetes.Interface // in protobuf: the bench lists thousands of Deployments a second
	dyn        dynamic.Interface
	sourceGVR  = schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1", Resource: "apiserversources"}
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

// kubectl is a step that runs hack/bench-knative.sh's kubectl ($KUBECTL),
// printing its errors only.
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

// ensureDirect puts the Foo operator back in direct wiring as a user does
// (test/knative's backToDirect) if a run before left it on the stream, and
// says so in a note. The stream stays, with the Bar operator if it was on it.
func (r *results) ensureDirect(ctx context.Context) error {
	stream, err := dyn.Resource(sourceGVR).Namespace(streamNS).Get(ctx, "operators", metav1.GetOptions{})
	if err != nil && !apierrs.IsNotFound(err) {
		return err
	}
	onStream := false
	if err == nil {
		watched, _, _ := unstructured.NestedSlice(stream.Object, "spec", "resources")
		onStream = slices.ContainsFunc(watched, func(w any) bool { m, _ := w.(map[string]any); return m["kind"] == "Foo" })
	}
	if _, err := dyn.Resource(sourceGVR).Namespace(fooSystem).Get(ctx, "foos", metav1.GetOptions{}); err == nil && !onStream {
		return nil
	}
	if logf("the Foo operator back to direct wiring"); !onStream {
		r.Notes = append(r.Notes, "Phase 1 began with Foo's own ApiServerSource missing: the release was applied again.")
		return kubectl("apply", "-f", releaseFoo)(ctx)
	}
	r.Notes = append(r.Notes, "Phase 1 began with the Foo operator on the stream (a run before left it so): it was taken back to direct wiring; "+
		"the stream, and the Bar operator if it was on it, stayed, their pods running beside phase 1 and not counted in its rows.")
	return steps(ctx, kubectl("apply", "-f", releaseFoo), applyStream("examples/bar-operator-stream"),
		kubectl("-n", streamNS, "delete", "trigger", "-l", "app.kubernetes.io/part-of=foo-operator"),
		kubectl("delete", "--ignore-not-found", "clusterrole", "foo-operator-stream"))
}

// switchToStream installs the example Bar operator and puts both operators
// on the shared stream as the Knative suite's TestBrokerWiring does: the
// stream with both Components, its Broker, source and dead letters Ready,
// the operators' own sources deleted, the stream's adapter alone and
// delivering.
func switchToStream(ctx context.Context) error {
	return steps(ctx, kubectl("apply", "-f", releaseBar), ready(barSystem, "ksvc/"+barReconciler.name),
		applyStream("foo-operator-stream", "examples/bar-operator-stream"),
		ready(streamNS, "broker/operators"), ready(streamNS, "apiserversource/operators"), ready(streamNS, "ksvc/"+deadLetters.name),
		kubectl("-n", fooSystem, "delete", "--ignore-not-found", "apiserversource", "foos"),
		kubectl("-n", barSystem, "delete", "--ignore-not-found", "apiserversource", "bars"), streamWiring.delivers)
}

// podsOf lists the pods of ns ("" for all) that match selector, terminating
// ones too (they hold their memory and requests until gone), finished ones
// (a Job's) not.
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

// delivers waits until the wiring's adapter has rolled out with every bench
// namespace in its configuration, one Deployment with one pod (alone: no
// other adapter Deployment or pod in the cluster), then until a canary Foo
// is reconciled: a new adapter may lose what happens before it lists, so up
// to four canaries.
func (w wiring) delivers(ctx context.Context) error {
	err := poll(ctx, time.Second, 5*time.Minute, "the adapter in "+w.adapterNS+" rolled out", func(ctx context.Context) (bool, error) {
		deps, err := kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
		if err != nil {
			return false, nil
		}
		pods, err := podsOf(ctx, "", adapterSelector)
		mine := func(ns string) bool { return ns == w.adapterNS }
		depsMine := slices.DeleteFunc(deps.Items, func(d appsv1.Deployment) bool { return !mine(d.Namespace) })
		podsMine := slices.DeleteFunc(slices.Clone(pods), func(p corev1.Pod) bool { return !mine(p.Namespace) })
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
