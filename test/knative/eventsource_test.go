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

package knative

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	sourcesv1 "knative.dev/eventing/pkg/apis/sources/v1"
	eventingclient "knative.dev/eventing/pkg/client/clientset/versioned"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/frugal-operator/foo-operator/examples/apiserversource/pkg/reconciler/apiserversource"
	"github.com/frugal-operator/foo-operator/pkg/serverless"
	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// The ApiServerSource example (examples/apiserversource) as the test
// installs it, and the Lease by which eventing's own ApiServerSource
// controller leads its only bucket.
const (
	exampleSystem  = "apiserversource-operator"
	exampleService = apiserversource.AgentName // its Service, account and field manager
	eventingLease  = "controller.knative.dev.eventing.pkg.reconciler.apiserversource.reconciler.00-of-01"
	leaseHolder    = "knative-e2e"
	// The class of the test's Brokers: no controller reconciles them, the
	// test writes their address.
	unhandledClass = "knative-e2e-unhandled"
)

// An event source of the sample-source shape on the library, on real
// Knative: eventing's ApiServerSource reconciler, unchanged, run by
// examples/apiserversource as a Knative Service scoped to one namespace
// (WATCH_NAMESPACE), woken by its own ApiServerSource. Eventing's
// controller, which reconciles every ApiServerSource of the cluster, is
// kept from this test's sources by the test holding its Lease. A Broker's
// new address reaches the adapter's K_SINK (the tracker, fed by the
// Broker's event), so does a new config-logging (the configmap.Watcher,
// fed by its event), and a trust bundle made in the source's namespace is
// mounted in the adapter (the ConfigMap's event resyncs the sources).
func TestAnEventSourceOnTheLibrary(t *testing.T) {
	ctx := context.Background()
	from, err := controlplane.AuditLogEnd(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ec := eventingclient.NewForConfigOrDie(cfg)
	installExample(t, ns)
	quietEventing(t)

	setUnhandledBroker(t, ec, ns, "sink", "http://one.example.test")
	source := &sourcesv1.ApiServerSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tracking",
			Annotations: map[string]string{serverlesstest.FailFastAnnotation: "true"}},
		Spec: sourcesv1.ApiServerSourceSpec{
			Resources: []sourcesv1.APIVersionKindSelector{{APIVersion: "v1", Kind: "ConfigMap"}},
			SourceSpec: duckv1.SourceSpec{Sink: duckv1.Destination{
				Ref: &duckv1.KReference{APIVersion: "eventing.knative.dev/v1", Kind: "Broker", Name: "sink"}}},
		},
	}
	if _, err := ec.SourcesV1().ApiServerSources(ns).Create(ctx, source, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	adapter := func(ctx context.Context) (*appsv1.Deployment, error) {
		l, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: "eventing.knative.dev/sourceName=tracking"})
		switch {
		case err != nil:
			return nil, err
		case len(l.Items) != 1:
			return nil, fmt.Errorf("%d adapter Deployments", len(l.Items))
		}
		return &l.Items[0], nil
	}
	envOf := func(ctx context.Context, name string) string {
		d, err := adapter(ctx)
		if err != nil {
			return err.Error()
		}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	clustertest.Eventually(t, 3*time.Minute, "the example made the adapter, sending to the Broker", func(ctx context.Context) (bool, string) {
		d, err := adapter(ctx)
		if err != nil {
			return false, err.Error()
		}
		if m := writers(d); !slices.Equal(m, []string{exampleService}) {
			return false, fmt.Sprintf("the adapter's Deployment is written by %v", m)
		}
		k := envOf(ctx, "K_SINK")
		return k == "http://one.example.test", "K_SINK " + k
	})

	start := time.Now()
	setUnhandledBroker(t, ec, ns, "sink", "http://two.example.test")
	clustertest.Eventually(t, 2*time.Minute, "the Broker's new address in K_SINK", func(ctx context.Context) (bool, string) {
		k := envOf(ctx, "K_SINK")
		return k == "http://two.example.test", "K_SINK " + k
	})
	t.Logf("the Broker's new address reached the adapter's Deployment %v after the Broker's status changed", time.Since(start).Round(time.Millisecond))

	const marker = "knative-e2e-marker"
	if l := envOf(ctx, "K_LOGGING_CONFIG"); strings.Contains(l, marker) {
		t.Fatal("the marker is in K_LOGGING_CONFIG before config-logging has it: the test proves nothing")
	}
	logging := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "config-logging", Namespace: exampleSystem,
			Labels: map[string]string{serverless.ConfigLabel: exampleService}},
		Data: map[string]string{"zap-logger-config": `{"level":"info","encoderConfig":{"messageKey":"` + marker + `"}}`},
	}
	start = time.Now()
	if _, err := kube.CoreV1().ConfigMaps(exampleSystem).Create(ctx, logging, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().ConfigMaps(exampleSystem).Delete(context.Background(), "config-logging", metav1.DeleteOptions{})
	})
	clustertest.Eventually(t, 2*time.Minute, "the new config-logging in K_LOGGING_CONFIG", func(ctx context.Context) (bool, string) {
		l := envOf(ctx, "K_LOGGING_CONFIG")
		return strings.Contains(l, marker), "K_LOGGING_CONFIG " + l
	})
	t.Logf("config-logging reached the adapter's Deployment %v after it was made", time.Since(start).Round(time.Millisecond))

	mounts := func(ctx context.Context) (bool, string) {
		d, err := adapter(ctx)
		if err != nil {
			return false, err.Error()
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			for _, p := range ptr.Deref(v.Projected, corev1.ProjectedVolumeSource{}).Sources {
				if p.ConfigMap != nil && p.ConfigMap.Name == "bundle" {
					return true, "volume " + v.Name + " projects ConfigMap bundle"
				}
			}
		}
		return false, "no volume projects ConfigMap bundle"
	}
	if ok, _ := mounts(ctx); ok {
		t.Fatal("the adapter mounts the bundle before it exists: the test proves nothing")
	}
	bundle := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: ns, Labels: map[string]string{"networking.knative.dev/trust-bundle": "true"}},
		Data:       map[string]string{"ca.crt": ""},
	}
	start = time.Now()
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, bundle, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	clustertest.Eventually(t, 2*time.Minute, "the adapter mounts the trust bundle", mounts)
	t.Logf("the trust bundle reached the adapter's Deployment %v after it was made", time.Since(start).Round(time.Millisecond))

	// The scope held: the reconciler wrote in ns and its own namespace
	// only, and listed no ApiServerSource of the other namespaces.
	events, _, err := controlplane.ReadAuditLog(auditLog, from, "system:serviceaccount:"+exampleSystem+":"+exampleService, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		switch r := e.ObjectRef; {
		case r.Namespace == ns || r.Namespace == exampleSystem:
		case slices.Contains([]string{"create", "update", "patch", "delete", "deletecollection"}, e.Verb),
			r.Resource == "apiserversources":
			t.Errorf("the reconciler scoped to %s asked %s of namespace %q", ns, e.Request(), r.Namespace)
		}
	}
	if len(events) == 0 {
		t.Error("the audit log has no request of the reconciler: the check above proves nothing")
	}
}

// writers are the field managers of obj's spec and metadata (its status
// left out: the Deployment controller writes it).
func writers(obj metav1.Object) []string {
	var m []string
	for _, f := range obj.GetManagedFields() {
		if f.Subresource == "" && !slices.Contains(m, f.Manager) {
			m = append(m, f.Manager)
		}
	}
	return m
}

// setUnhandledBroker makes Broker ns/name of a class no controller
// handles, if it is missing, and gives it address url, as a Broker
// controller would.
func setUnhandledBroker(t *testing.T, ec eventingclient.Interface, ns, name, url string) {
	t.Helper()
	ctx := context.Background()
	brokers := ec.EventingV1().Brokers(ns)
	b, err := brokers.Get(ctx, name, metav1.GetOptions{})
	if apierrs.IsNotFound(err) {
		b, err = brokers.Create(ctx, &eventingv1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{eventingv1.BrokerClassAnnotationKey: unhandledClass}}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	u, err := apis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	b.Status.Address = &duckv1.Addressable{URL: u}
	if _, err := brokers.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// installExample builds the example's images with ko into the cluster's
// registry and applies its config/ (eventing has the CRD already), the
// reconciler scoped to namespace ns, then waits until its Service and its
// own ApiServerSource are Ready (that source is eventing's controller's to
// reconcile: it is made before quietEventing); it deletes them when the
// test ends.
func installExample(t *testing.T, ns string) {
	t.Helper()
	dir := filepath.Join(root, "examples", "apiserversource", "config")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ko, err := exec.Command(filepath.Join(root, "hack", "build-tools.sh"), "--path", "ko").Output()
	if err != nil {
		t.Fatal("hack/build-tools.sh --path ko:", err)
	}
	args := []string{"resolve", "--platform=linux/amd64", "--base-import-paths", "--sbom=none"}
	for _, f := range files {
		if !strings.HasSuffix(f, "300-apiserversource.yaml") {
			args = append(args, "-f", f)
		}
	}
	cmd := exec.Command(strings.TrimSpace(string(ko)), args...)
	cmd.Dir, cmd.Stderr = root, os.Stderr
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "KO_DOCKER_REPO=localhost:5000/foo-operator", "KO_DEFAULTBASEIMAGE=localhost:5000/base:static")
	resolved, err := cmd.Output()
	if err != nil {
		t.Fatal("ko resolve:", err)
	}
	// The reconciler reconciles the sources of ns only, from its first
	// pod: eventing's controller keeps those of every other namespace.
	lines := strings.SplitAfter(string(resolved), "\n")
	at := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "- name: ACK_DEADLINE" })
	if at < 0 {
		t.Fatal("the reconciler's Service has no ACK_DEADLINE to add WATCH_NAMESPACE beside")
	}
	indent := lines[at][:strings.Index(lines[at], "-")]
	lines = slices.Insert(lines, at, indent+"- name: WATCH_NAMESPACE\n", indent+"  value: "+ns+"\n")
	manifest := filepath.Join(t.TempDir(), "apiserversource.yaml")
	scoped := strings.Join(lines, "")
	if err := os.WriteFile(manifest, []byte(scoped), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := kubectl("apply", "-f", manifest); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kubectl("delete", "--ignore-not-found", "--wait", "-f", manifest); err != nil {
			t.Error(err)
		}
	})
	clustertest.Eventually(t, 3*time.Minute, "the example's Service is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, ksvcGVR, exampleSystem, exampleService)
	})
	clustertest.Eventually(t, 3*time.Minute, "the example's ApiServerSource is Ready", func(ctx context.Context) (bool, string) {
		return ready(ctx, sourceGVR, exampleSystem, "apiserversources")
	})
}

// quietEventing keeps eventing's ApiServerSource controller from
// reconciling until the test ends: the test holds the Lease of its only
// bucket, renewing it every 2 s, and waits until the controller has
// stopped leading (its log says so). When the test ends, it releases the
// Lease and waits until the controller leads again.
func quietEventing(t *testing.T) {
	t.Helper()
	leases := kube.CoordinationV1().Leases("knative-eventing")
	since := metav1.Now()
	l, err := leases.Get(context.Background(), eventingLease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	led := ptr.Deref(l.Spec.HolderIdentity, "") != "" && l.Spec.RenewTime != nil &&
		time.Since(l.Spec.RenewTime.Time) < time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0))*time.Second
	hold := func(ctx context.Context) error {
		l, err := leases.Get(ctx, eventingLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NowMicro()
		if ptr.Deref(l.Spec.HolderIdentity, "") != leaseHolder {
			l.Spec.AcquireTime = &now
			l.Spec.LeaseTransitions = ptr.To(ptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		}
		l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = ptr.To(leaseHolder), &now, ptr.To[int32](15)
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	}
	clustertest.Eventually(t, time.Minute, "the test holds eventing's Lease", func(ctx context.Context) (bool, string) {
		err := hold(ctx)
		return err == nil, fmt.Sprint(err)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = hold(ctx) // a conflict is retried at the next tick
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		clustertest.Eventually(t, time.Minute, "eventing's Lease released", func(ctx context.Context) (bool, string) {
			l, err := leases.Get(ctx, eventingLease, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			now := metav1.NowMicro()
			l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = ptr.To(""), &now, ptr.To[int32](1)
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
			return err == nil, fmt.Sprint(err)
		})
		clustertest.Eventually(t, 2*time.Minute, "eventing's controller leads again", func(ctx context.Context) (bool, string) {
			l, err := leases.Get(ctx, eventingLease, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			h := ptr.Deref(l.Spec.HolderIdentity, "")
			return h != "" && h != leaseHolder, "held by " + h
		})
	})
	if !led {
		return
	}
	clustertest.Eventually(t, 2*time.Minute, "eventing's controller stopped leading", func(ctx context.Context) (bool, string) {
		return eventingLogged(ctx, since, "has stopped leading", eventingLease)
	})
}

// eventingLogged tells whether a line of eventing's controller's log since
// then holds every one of words.
func eventingLogged(ctx context.Context, since metav1.Time, words ...string) (bool, string) {
	pods, err := kube.CoreV1().Pods("knative-eventing").List(ctx, metav1.ListOptions{LabelSelector: "app=eventing-controller"})
	if err != nil {
		return false, err.Error()
	}
	if len(pods.Items) == 0 {
		return false, "no eventing-controller pod"
	}
	for _, p := range pods.Items {
		logs, err := kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{SinceTime: &since}).Stream(ctx)
		if err != nil {
			return false, err.Error()
		}
		found := false
		for s := bufio.NewScanner(logs); s.Scan() && !found; {
			found = !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(s.Text(), w) })
		}
		logs.Close()
		if found {
			return true, ""
		}
	}
	return false, fmt.Sprintf("no line of eventing-controller's log holds %q", words)
}
