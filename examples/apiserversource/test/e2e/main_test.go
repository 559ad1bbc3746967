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

// Package e2e runs Knative Eventing's ApiServerSource reconciler, unchanged,
// on pkg/serverless through the real parts (test/localenv): a loopback
// kube-apiserver, etcd and kube-controller-manager, the
// apiserversource-reconciler binary under its ServiceAccount with exactly
// config/'s roles, and the real ApiServerSource adapter (ApiServerSources,
// their labelled Deployments, Brokers) delivering every event. The Brokers
// are only their CRD and a status the tests write: no Eventing runs here.
package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	eventingv1 "knative.dev/eventing/pkg/apis/eventing/v1"
	v1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/eventing/pkg/client/clientset/versioned"

	"github.com/frugal-operator/foo-operator/examples/apiserversource/pkg/reconciler/apiserversource"
	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// operatorNamespace is config/'s namespace.
const operatorNamespace = "apiserversource-operator"

// ownerLabel is the label eventing puts on an ApiServerSource's Deployment.
var ownerLabel = apiserversource.Operator.Owned[0].OwnerLabel

// ApiServerSource is the operator as localenv runs it: config/'s manifests
// that a cluster without Knative can take, the Broker CRD (Eventing's), and
// its ApiServerSource.
var ApiServerSource = localenv.Operator{
	Name:      apiserversource.AgentName,
	Main:      "./examples/apiserversource/cmd/apiserversource-reconciler",
	Namespace: operatorNamespace,
	Manifests: append(localenv.Files("examples/apiserversource/config/", "100-namespace.yaml", "200-serviceaccounts.yaml",
		"200-clusterroles.yaml", "200-roles.yaml", "201-clusterrolebindings.yaml", "201-rolebindings.yaml",
		"300-apiserversource.yaml", "400-config-features.yaml", "400-config-observability.yaml"),
		"examples/apiserversource/test/e2e/broker-crd.yaml"),
	CRDs:           []string{"crd/apiserversources.sources.knative.dev", "crd/brokers.eventing.knative.dev"},
	SourcesAccount: "apiserversource-sources",
	Sources: []localenv.Source{
		// config/600-sources.yaml's source, but for its own adapter's pod:
		// no Eventing runs here to make one.
		{Name: "apiserversources", Config: localenv.SourceOf(apiserversource.Operator)},
	},
	PingSource: "apiserversource-resync",
	Canary:     canary,
}

// env is the running operator, with an admin client of eventing's kinds.
var env struct {
	*localenv.Env
	eventing versioned.Interface
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// config/500-reconciler.yaml's, which ko resolves; nothing runs it here.
	os.Setenv("APISERVER_RA_IMAGE", "example.test/apiserver-receive-adapter")
	e, err := localenv.UpForTests(ApiServerSource)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	env.Env, env.eventing = e, versioned.NewForConfigOrDie(e.Config)
	return e.Finish(m.Run())
}

// newSource is an ApiServerSource of ConfigMaps sending to Broker sink, in
// fail-fast mode (no access review).
func newSource(ns, name, sink string) *v1.ApiServerSource {
	return &v1.ApiServerSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Annotations: map[string]string{serverlesstest.FailFastAnnotation: "true"}},
		Spec: v1.ApiServerSourceSpec{
			Resources: []v1.APIVersionKindSelector{{APIVersion: "v1", Kind: "ConfigMap"}},
			SourceSpec: duckv1.SourceSpec{Sink: duckv1.Destination{
				Ref: &duckv1.KReference{APIVersion: "eventing.knative.dev/v1", Kind: "Broker", Name: sink}}},
		},
	}
}

// setBroker makes Broker ns/name, if it is missing, and gives it address url.
func setBroker(ctx context.Context, ec versioned.Interface, ns, name, url string) error {
	brokers := ec.EventingV1().Brokers(ns)
	b, err := brokers.Get(ctx, name, metav1.GetOptions{})
	if apierrs.IsNotFound(err) {
		b, err = brokers.Create(ctx, &eventingv1.Broker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	u, err := apis.ParseURL(url)
	if err != nil {
		return err
	}
	b.Status.Address = &duckv1.Addressable{URL: u}
	_, err = brokers.UpdateStatus(ctx, b, metav1.UpdateOptions{})
	return err
}

// adapter returns the Deployment of ApiServerSource ns/name, found by the
// label eventing gives it (its name ends with the source's UID).
func adapter(ctx context.Context, kube interface {
	List(context.Context, metav1.ListOptions) (*appsv1.DeploymentList, error)
}, name string) (*appsv1.Deployment, error) {
	l, err := kube.List(ctx, metav1.ListOptions{LabelSelector: ownerLabel + "=" + name})
	switch {
	case err != nil:
		return nil, err
	case len(l.Items) != 1:
		return nil, fmt.Errorf("%d Deployments labelled %s=%s", len(l.Items), ownerLabel, name)
	}
	return &l.Items[0], nil
}

// sinkOf is the K_SINK the adapter's container is given.
func sinkOf(d *appsv1.Deployment) string {
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "K_SINK" {
			return e.Value
		}
	}
	return ""
}

// canary proves every watch of the adapter delivers: a canary source's new
// sink must reach its Deployment (the ApiServerSources), so must its
// Broker's new address (the Brokers), and a hand-edited K_SINK must be
// reverted (the Deployments). Each watch starts on its own: one of a
// just-installed CRD can be refused (429) and come up a second after the
// others, and whatever changes in that second sends no event.
func canary(ctx context.Context, e *localenv.Env) error {
	ec := versioned.NewForConfigOrDie(e.Config)
	sources := ec.SourcesV1().ApiServerSources(operatorNamespace)
	deps := e.Kube.AppsV1().Deployments(operatorNamespace)
	for _, b := range []string{"canary-0", "canary-1"} {
		if err := setBroker(ctx, ec, operatorNamespace, b, "http://"+b+".example.test"); err != nil {
			return err
		}
	}
	if _, err := sources.Create(ctx, newSource(operatorNamespace, "canary", "canary-0"), metav1.CreateOptions{}); err != nil && !apierrs.IsAlreadyExists(err) {
		return err
	}
	want := ""
	holds := func() bool {
		d, err := adapter(ctx, deps, "canary")
		return err == nil && sinkOf(d) == want
	}
	broker := ""
	if err := localenv.Repeat(ctx, func(i int) error {
		broker = "canary-" + strconv.Itoa((i+1)%2)
		want = "http://" + broker + ".example.test"
		_, err := sources.Patch(ctx, "canary", types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/spec/sink/ref/name","value":"`+broker+`"}]`), metav1.PatchOptions{})
		return err
	}, holds); err != nil {
		return fmt.Errorf("the ApiServerSource adapter delivers nothing: %w", err)
	}
	if err := localenv.Repeat(ctx, func(i int) error {
		want = "http://" + broker + "-" + strconv.Itoa(i) + ".example.test"
		return setBroker(ctx, ec, operatorNamespace, broker, want)
	}, holds); err != nil {
		return fmt.Errorf("the adapter delivers no Broker: %w", err)
	}
	if err := localenv.Repeat(ctx, func(i int) error {
		d, err := adapter(ctx, deps, "canary")
		if err != nil {
			return err
		}
		for j, v := range d.Spec.Template.Spec.Containers[0].Env {
			if v.Name == "K_SINK" {
				d.Spec.Template.Spec.Containers[0].Env[j].Value = "http://hand-" + strconv.Itoa(i) + ".example.test"
			}
		}
		if _, err = deps.Update(ctx, d, metav1.UpdateOptions{}); apierrs.IsConflict(err) {
			return nil // the reconciler wrote it meanwhile: edit it again
		}
		return err
	}, holds); err != nil {
		return fmt.Errorf("the adapter delivers no Deployment: %w", err)
	}
	return nil
}

func namespace(t *testing.T) string {
	t.Helper()
	return clustertest.Namespace(t, env.Kube, "as-e2e-")
}

func eventually(t *testing.T, what string, cond func(context.Context) (bool, string)) {
	t.Helper()
	clustertest.Eventually(t, time.Minute, what, cond)
}
