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

package harness

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// classicName names the classic's binary, ServiceAccount and role.
const classicName = "sample-controller"

// The Foos of each side, and the Deployments both make.
var (
	oursGVR        = foo.Operator.Owner.Resource
	classicGVR     = schema.GroupVersionResource{Group: "samplecontroller.k8s.io", Version: "v1alpha1", Resource: "foos"}
	deploymentsGVR = appsv1.SchemeGroupVersion.WithResource("deployments")
)

// run is one N's control plane, with what every controller's measure needs.
type run struct {
	cfg                Config
	n, port            int // port: where ours serves events, at url
	url                string
	cp                 *controlplane.ControlPlane
	kube               kubernetes.Interface
	dyn                dynamic.Interface
	ourBin, classicBin string
	ourKC, classicKC   string // the ServiceAccounts' kubeconfigs
	adapter            *controlplane.Process
}

// setUp starts N's control plane and makes ready what every measure needs.
func setUp(ctx context.Context, cfg Config, n int) (*run, error) {
	cfg.Log("N=%d: starting etcd and kube-apiserver", n)
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: filepath.Join(cfg.Dir, fmt.Sprintf("n%d", n))})
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, n: n, cp: cp}
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.QPS, rc.Burst = 2000, 4000
	r.kube, r.dyn = kubernetes.NewForConfigOrDie(rc), dynamic.NewForConfigOrDie(rc)
	for _, step := range []func(context.Context) error{r.install, r.populate, r.startAdapter, r.settleOurs} {
		if err := step(ctx); err != nil {
			_ = cp.Stop()
			return nil, err
		}
	}
	return r, nil
}

// install applies config/ and the classic's CRD, gives the classic a
// ServiceAccount as ours has (both pay for RBAC on every request), and finds
// or builds both controllers, ours as ko builds it.
func (r *run) install(ctx context.Context) error {
	crd, err := classicCRD()
	if err != nil {
		return err
	}
	if err := localenv.ApplyConfig(ctx, r.cp, localenv.Foo); err != nil {
		return err
	}
	ns, foos := localenv.Namespace, "foos."+classicGVR.Group
	for _, args := range [][]string{
		{"apply", "-f", crd},
		{"wait", "--for=condition=Established", "--timeout=60s", "crd/" + foos},
		{"create", "serviceaccount", classicName, "-n", ns},
		{"create", "clusterrole", classicName, "--verb=get,list,watch,create,update,patch", "--resource=" + foos + "," + foos + "/status,deployments.apps,events"},
		{"create", "clusterrolebinding", classicName, "--clusterrole=" + classicName, "--serviceaccount=" + ns + ":" + classicName},
	} {
		if err := localenv.Kubectl(ctx, r.cp, nil, args...); err != nil {
			return err
		}
	}
	if r.classicKC, _, err = r.cp.KubeconfigForServiceAccount(ctx, ns, classicName, 0); err != nil {
		return err
	}
	if r.ourKC, _, err = r.cp.KubeconfigForServiceAccount(ctx, ns, localenv.Foo.Name, 0); err != nil {
		return err
	}
	if r.classicBin, err = controlplane.BinaryPath(classicName + "-raised"); err != nil {
		return err
	}
	if r.ourBin, err = localenv.BuildReconciler(ctx, localenv.Foo, r.cp.Dir); err != nil || !r.cfg.SenderAuth {
		return err
	}
	return localenv.OIDCIdentities(ctx, r.kube, localenv.FoosIdentity, localenv.ResyncIdentity)
}

// classicCRD returns the classic's CRD with the status subresource its UpdateStatus needs.
func classicCRD() (string, error) {
	root, err := controlplane.RepoRoot()
	if err != nil {
		return "", err
	}
	const mod = "k8s.io/sample-controller"
	cmd := exec.Command("sh", "-c", "go mod download "+mod+" && go list -m -f '{{.Dir}}' "+mod)
	cmd.Dir = filepath.Join(root, "hack", "tools", "sample-controller")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating %s: %w", mod, err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "artifacts", "examples", "crd-status-subresource.yaml"), nil
}

// startAdapter starts the Foo operator's adapter (config/600-sources.yaml) for the whole N.
func (r *run) startAdapter(ctx context.Context) error {
	var err error
	if r.port, err = controlplane.FreePort(); err != nil {
		return err
	}
	r.url = "http://127.0.0.1:" + strconv.Itoa(r.port)
	kc, _, err := r.cp.KubeconfigForServiceAccount(ctx, localenv.Namespace, localenv.Foo.SourcesAccount, 0)
	var env []string
	if r.cfg.SenderAuth {
		env = localenv.AdapterOIDCEnv(localenv.FoosIdentity)
	}
	if err == nil {
		r.adapter, err = r.cp.StartAdapter("foos", localenv.Namespace, r.url, localenv.FooSource, kc, env...)
	}
	return err
}

// settleOurs has ours write its Foos' status, as it would have long ago, and
// lets the adapter deliver those writes' events before any measured one.
func (r *run) settleOurs(ctx context.Context) error {
	r.cfg.Log("N=%d: settling our Foos' status (not measured)", r.n)
	p, err := r.start(ctx, controller{label: "settle"})
	if err != nil {
		return err
	}
	defer func() { _ = p.Stop() }()
	if err := until(ctx, p, 500*time.Millisecond, func(ctx context.Context) bool {
		list, err := r.dyn.Resource(oursGVR).Namespace("bench").List(ctx, metav1.ListOptions{})
		done := 0
		for i := 0; err == nil && i < len(list.Items); i++ {
			if written(&list.Items[i], 0) {
				done++
			}
		}
		return done >= r.n
	}); err != nil {
		return err
	}
	r.settle(ctx)
	return nil
}

// populate makes N Foos of each side with their Deployments, and N others.
func (r *run) populate(ctx context.Context) error {
	r.cfg.Log("N=%d: creating %d Foos of each side with their Deployments, and %d other Deployments", r.n, r.n, r.n)
	if err := r.namespace(ctx, "bench"); err != nil {
		return err
	}
	return parallel(r.n, func(i int) error {
		if err := r.createWithDeployment(ctx, oursGVR, fmt.Sprintf("ours-%d", i)); err != nil {
			return err
		}
		if err := r.createWithDeployment(ctx, classicGVR, fmt.Sprintf("classic-%d", i)); err != nil {
			return err
		}
		other := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("other-%d", i)}, Spec: classicDeployment(fmt.Sprintf("other-%d", i))}
		_, err := r.kube.AppsV1().Deployments("bench").Create(ctx, other, metav1.CreateOptions{})
		return err
	})
}

// createWithDeployment creates a Foo of g and the Deployment its controller makes.
func (r *run) createWithDeployment(ctx context.Context, g schema.GroupVersionResource, name string) error {
	u, err := r.createFoo(ctx, g, "bench", name)
	if err != nil {
		return err
	}
	d := &appsv1.Deployment{Spec: classicDeployment(name), ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(u, classicGVR.GroupVersion().WithKind("Foo"))}}}
	if g == oursGVR {
		var f samplesv1alpha1.Foo
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &f); err != nil {
			return err
		}
		d = resources.MakeDeployment(&f)
	}
	_, err = r.kube.AppsV1().Deployments("bench").Create(ctx, d, metav1.CreateOptions{})
	return err
}

// classicDeployment is the spec of the Deployment the sample-controller makes.
func classicDeployment(name string) appsv1.DeploymentSpec {
	labels := map[string]string{"app": "nginx", "controller": name}
	return appsv1.DeploymentSpec{Replicas: ptr.Int32(1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:latest"}}}}}
}

// createFoo creates a Foo of g asking for one replica.
func (r *run) createFoo(ctx context.Context, g schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": g.GroupVersion().String(), "kind": "Foo",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"deploymentName": name, "replicas": int64(1)}}}
	return r.dyn.Resource(g).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
}

// written tells whether a Foo has a status: the classic's any, ours of its generation, at least min.
func written(u *unstructured.Unstructured, min int64) bool {
	if u.GroupVersionKind().Group == classicGVR.Group {
		return u.Object["status"] != nil
	}
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return observed >= min && observed == u.GetGeneration()
}

// namespace makes the namespace unless it exists.
func (r *run) namespace(ctx context.Context, name string) error {
	_, err := r.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrs.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// parallel runs f(0), ..., f(n-1), 32 at a time, and returns the first error.
func parallel(n int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}
