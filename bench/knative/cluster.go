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
	"io"
	"os"
	"os/exec"
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
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/frugal-operator/foo-operator/test/onenode"
)

// kubeconfig is the one-node cluster's (hack/cluster/up.sh writes it).
var kubeconfig = onenode.Kubeconfig("")

// The namespaces of what the bench measures, besides its own.
const (
	fooSystem = "foo-operator"
	barSystem = "bar-operator"
	streamNS  = "operator-stream"
	classicNS = "classic-sample-controller"
	servingNS = "knative-serving"
	eventsNS  = "knative-eventing"
)

// adapterSelector selects the ApiServerSources' adapters: the Foo
// operator's own (direct wiring) or the stream's.
const adapterSelector = "eventing.knative.dev/source=apiserver-source-controller"

var (
	brokerGVR = schema.GroupVersionResource{Group: "eventing.knative.dev", Version: "v1", Resource: "brokers"}
	sourceGVR = schema.GroupVersionResource{Group: "sources.knative.dev", Version: "v1", Resource: "apiserversources"}
	ksvcGVR   = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}
)

var (
	// kube speaks protobuf: the bench lists thousands of Deployments a second.
	kube kubernetes.Interface
	dyn  dynamic.Interface
	// node reads the kubelet's /stats/summary, which is JSON.
	node rest.Interface
)

// connect makes the clients of the one-node cluster.
func connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("reading %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	pb := rest.CopyConfig(cfg)
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	pb.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	if kube, err = kubernetes.NewForConfig(pb); err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	if dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	js, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubelet client: %w", err)
	}
	node = js.CoreV1().RESTClient()
	return nil
}

// knativeService names a Knative Service, whose pods scale to zero.
type knativeService struct{ ns, name string }

var (
	fooReconciler = knativeService{fooSystem, "foo-reconciler"}
	barReconciler = knativeService{barSystem, "bar-reconciler"}
	deadLetters   = knativeService{streamNS, "dead-letters"}
)

// selector selects the Service's pods.
func (s knativeService) selector() string { return "serving.knative.dev/service=" + s.name }

// String names the Service as namespace/name.
func (s knativeService) String() string { return s.ns + "/" + s.name }

// wiring is how the Foos' events reach the Foo reconciler.
type wiring struct {
	name string
	// adapterNS is where the adapter that sends the Foos' events runs.
	adapterNS string
	// alone: that adapter must be the only one in the cluster.
	alone bool
	// reconcilers must be at zero before a burst.
	reconcilers []knativeService
}

var (
	directWiring = wiring{name: "direct wiring", adapterNS: fooSystem, reconcilers: []knativeService{fooReconciler}}
	streamWiring = wiring{name: "shared stream", adapterNS: streamNS, alone: true, reconcilers: []knativeService{fooReconciler, barReconciler}}
)

// poll calls cond at each interval of every until it is true, for at most
// within.
func poll(ctx context.Context, every, within time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	if err := wait.PollUntilContextTimeout(ctx, every, within, true, cond); err != nil {
		return fmt.Errorf("waiting %v for %s: %w", within, what, err)
	}
	return nil
}

// kubectl runs the kubectl of hack/bench-knative.sh ($KUBECTL) on the
// cluster; its output is dropped, its errors printed.
func kubectl(args ...string) error {
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		return errors.New("KUBECTL is not set (hack/bench-knative.sh sets it)")
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// ensureNamespace makes the namespace unless it exists.
func ensureNamespace(ctx context.Context, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrs.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// ready tells whether the object exists and is Ready (see readyOf).
func ready(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (bool, error) {
	u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, nil // not there yet, or the API server busy: asked again
	}
	return readyOf(u), nil
}

// readyOf tells whether u's Ready condition is True, of its generation: a
// Ready of an older generation says nothing of the change just made.
func readyOf(u *unstructured.Unstructured) bool {
	return generationObserved(u) && readyCondition(u)
}

// generationObserved tells whether u's status is of its generation.
func generationObserved(u *unstructured.Unstructured) bool {
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return observed == u.GetGeneration()
}

// readyCondition tells whether u's Ready condition is True.
func readyCondition(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if c, _ := c.(map[string]any); c["type"] == "Ready" {
			return c["status"] == "True"
		}
	}
	return false
}

// podsOf lists the pods of ns ("" for all) that match selector: terminating
// ones too (they hold their memory and requests until gone), finished ones
// (a Job's) not.
func podsOf(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing pods of %q (%s): %w", ns, selector, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out, nil
}

// atZero waits until the Service has no serving pod (a terminating one gets
// no requests): an event then needs a new pod.
func atZero(ctx context.Context, s knativeService) error {
	return poll(ctx, 250*time.Millisecond, 10*time.Minute, s.String()+" at zero", func(ctx context.Context) (bool, error) {
		pods, err := podsOf(ctx, s.ns, s.selector())
		if err != nil {
			return false, nil
		}
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// gone waits until the Services have no pod at all, terminating ones
// included (a pod drains for 30 s after its last request).
func gone(ctx context.Context, within time.Duration, services ...knativeService) error {
	for _, s := range services {
		err := poll(ctx, time.Second, within, "the pods of "+s.String()+" gone", func(ctx context.Context) (bool, error) {
			pods, err := podsOf(ctx, s.ns, s.selector())
			return err == nil && len(pods) == 0, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// delivers waits until the wiring's adapter has rolled out with every bench
// namespace in its configuration, then until a canary Foo is reconciled.
func delivers(ctx context.Context, w wiring) error {
	if err := adapterSettled(ctx, w); err != nil {
		return err
	}
	return canary(ctx)
}

// adapterSettled waits until the wiring's adapter runs, one Deployment
// rolled out with one pod, with every bench namespace in its
// configuration, and (stream) no other adapter Deployment or pod is left in
// the cluster.
func adapterSettled(ctx context.Context, w wiring) error {
	what := "the adapter in " + w.adapterNS + " rolled out with every bench namespace"
	if w.alone {
		what += ", alone in the cluster"
	}
	return poll(ctx, time.Second, 5*time.Minute, what, func(ctx context.Context) (bool, error) {
		deps, err := kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
		if err != nil {
			return false, nil
		}
		mine := 0
		for i := range deps.Items {
			d := &deps.Items[i]
			if d.Namespace != w.adapterNS {
				if w.alone {
					return false, nil
				}
				continue
			}
			mine++
			if !rolledOut(d) || !listsAll(d, benchNamespaces) {
				return false, nil
			}
		}
		pods, err := podsOf(ctx, "", adapterSelector)
		if err != nil || mine != 1 {
			return false, nil
		}
		in := 0
		for _, p := range pods {
			switch {
			case p.Namespace == w.adapterNS:
				in++
			case w.alone:
				return false, nil
			}
		}
		return in == 1, nil
	})
}

// rolledOut tells whether the Deployment's one replica is its latest
// template's, available.
func rolledOut(d *appsv1.Deployment) bool {
	s := d.Status
	return s.ObservedGeneration == d.Generation && s.Replicas == 1 && s.UpdatedReplicas == 1 && s.AvailableReplicas == 1
}

// listsAll tells whether the adapter's configuration (K_SOURCE_CONFIG)
// names every namespace given.
func listsAll(d *appsv1.Deployment, namespaces []string) bool {
	config := ""
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "K_SOURCE_CONFIG" {
			config = e.Value
		}
	}
	for _, ns := range namespaces {
		if !strings.Contains(config, strconv.Quote(ns)) {
			return false
		}
	}
	return true
}

// canary creates a Foo in the canary namespace and waits for its
// Deployment: the adapter delivers, the reconciler answers. A new adapter
// may lose what happens before it lists: up to four tries.
func canary(ctx context.Context) error {
	for try := 1; ; try++ {
		name := "canary-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		if _, err := dyn.Resource(oursGVR).Namespace(nsCanaries).Create(ctx, oursFoo.object(nsCanaries, name), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating canary Foo %s: %w", name, err)
		}
		err := poll(ctx, 100*time.Millisecond, 2*time.Minute, "the canary "+name+"'s Deployment", func(ctx context.Context) (bool, error) {
			_, err := kube.AppsV1().Deployments(nsCanaries).Get(ctx, name, metav1.GetOptions{})
			return err == nil, nil
		})
		if err == nil {
			return nil
		}
		if try == 4 {
			return fmt.Errorf("four canary Foos were never reconciled, the adapter does not deliver: %w", err)
		}
	}
}

// deploymentsSettled waits until the deployment controller has no backlog
// in the bench's namespaces: every Deployment's status is of its
// generation.
func deploymentsSettled(ctx context.Context) error {
	return poll(ctx, time.Second, 30*time.Minute, "every bench Deployment observed", func(ctx context.Context) (bool, error) {
		for _, ns := range benchNamespaces {
			deps, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return false, nil
			}
			for _, d := range deps.Items {
				if d.Status.ObservedGeneration != d.Generation {
					return false, nil
				}
			}
		}
		return true, nil
	})
}

// classicAvailable waits for the classic controller's Deployment (applied by
// hack/bench-knative.sh) to be Available.
func classicAvailable(ctx context.Context) error {
	return poll(ctx, time.Second, 3*time.Minute, "the classic controller Available", func(ctx context.Context) (bool, error) {
		d, err := kube.AppsV1().Deployments(classicNS).Get(ctx, classicNS, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return d.Status.AvailableReplicas == 1, nil
	})
}
