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

// Package e2e runs Knative Eventing's ContainerSource reconciler, unchanged,
// on pkg/serverless through the real parts (test/localenv): a loopback
// kube-apiserver, etcd and kube-controller-manager, the
// containersource-reconciler binary under its ServiceAccount with exactly
// config/'s roles, and the real ApiServerSource adapter (ContainerSources,
// their labelled Deployments, SinkBindings) delivering every event.
package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	v1 "knative.dev/eventing/pkg/apis/sources/v1"
	"knative.dev/eventing/pkg/client/clientset/versioned"

	"github.com/frugal-operator/foo-operator/examples/containersource/pkg/reconciler/containersource"
	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// operatorNamespace is config/'s namespace.
const operatorNamespace = "containersource-operator"

// ownerLabel is the label eventing puts on a ContainerSource's Deployment.
const ownerLabel = "sources.knative.dev/containerSource"

// ContainerSource is the operator as localenv runs it: config/'s manifests
// that a cluster without Knative can take, and its ApiServerSource.
var ContainerSource = localenv.Operator{
	Name:      "containersource-reconciler",
	Main:      "./examples/containersource/cmd/containersource-reconciler",
	Namespace: operatorNamespace,
	Manifests: localenv.Files("examples/containersource/config/", "100-namespace.yaml", "200-serviceaccounts.yaml",
		"200-clusterroles.yaml", "200-roles.yaml", "201-clusterrolebindings.yaml", "201-rolebindings.yaml",
		"300-containersource.yaml", "300-sinkbinding.yaml", "400-config-features.yaml", "400-config-observability.yaml"),
	CRDs:           []string{"crd/containersources.sources.knative.dev", "crd/sinkbindings.sources.knative.dev"},
	SourcesAccount: "containersource-sources",
	Sources: []localenv.Source{
		// config/600-sources.yaml's source, but for its own adapter's pod:
		// no Eventing runs here to make one.
		{Name: "containersources", Config: localenv.SourceOf(containersource.Operator)},
	},
	PingSource: "containersource-resync",
	Canary:     canary,
}

// env is the running operator, with an admin client of eventing's kinds.
var env struct {
	*localenv.Env
	sources versioned.Interface
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	e, err := localenv.UpForTests(ContainerSource)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	env.Env, env.sources = e, versioned.NewForConfigOrDie(e.Config)
	return e.Finish(m.Run())
}

// newSource is a ContainerSource running image, sending to a URI (so that
// no Addressable need exist).
func newSource(ns, name, image string) *v1.ContainerSource {
	return &v1.ContainerSource{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ContainerSourceSpec{
			SourceSpec: duckv1.SourceSpec{Sink: duckv1.Destination{URI: apis.HTTP("sink.example.test")}},
			Template:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "source", Image: image}}}},
		},
	}
}

// canary proves every watch of both adapters delivers: a canary
// ContainerSource's image must reach its Deployment (the ContainerSource
// adapter), a hand-edited image must be reverted (the owned adapter's
// Deployments), and so must a hand-edited sink (its SinkBindings). Each
// watch starts on its own: one of a just-installed CRD can be refused
// (429) and come up a second after the others, and whatever changes in
// that second sends no event.
func canary(ctx context.Context, e *localenv.Env) error {
	sources := versioned.NewForConfigOrDie(e.Config).SourcesV1().ContainerSources(operatorNamespace)
	deps := e.Kube.AppsV1().Deployments(operatorNamespace)
	if _, err := sources.Create(ctx, newSource(operatorNamespace, "canary", "canary-0"), metav1.CreateOptions{}); err != nil && !apierrs.IsAlreadyExists(err) {
		return err
	}
	want := "canary-0"
	holds := func() bool {
		d, err := deps.Get(ctx, "canary-deployment", metav1.GetOptions{})
		return err == nil && d.Spec.Template.Spec.Containers[0].Image == want
	}
	if err := localenv.Repeat(ctx, func(i int) error {
		want = "canary-" + strconv.Itoa(i+1)
		_, err := sources.Patch(ctx, "canary", types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"`+want+`"}]`), metav1.PatchOptions{})
		return err
	}, holds); err != nil {
		return fmt.Errorf("the ContainerSource adapter delivers nothing: %w", err)
	}
	if err := localenv.Repeat(ctx, func(i int) error {
		_, err := deps.Patch(ctx, "canary-deployment", types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"hand-`+strconv.Itoa(i)+`"}]`), metav1.PatchOptions{})
		return err
	}, holds); err != nil {
		return fmt.Errorf("the owned objects' adapter delivers no Deployment: %w", err)
	}
	bindings := versioned.NewForConfigOrDie(e.Config).SourcesV1().SinkBindings(operatorNamespace)
	if err := localenv.Repeat(ctx, func(i int) error {
		_, err := bindings.Patch(ctx, "canary-sinkbinding", types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/spec/sink/uri","value":"http://hand-`+strconv.Itoa(i)+`.example.test"}]`), metav1.PatchOptions{})
		return err
	}, func() bool {
		sb, err := bindings.Get(ctx, "canary-sinkbinding", metav1.GetOptions{})
		return err == nil && sb.Spec.Sink.URI.String() == sink
	}); err != nil {
		return fmt.Errorf("the owned objects' adapter delivers no SinkBinding: %w", err)
	}
	return nil
}

func namespace(t *testing.T) string {
	t.Helper()
	return clustertest.Namespace(t, env.Kube, "cs-e2e-")
}

func eventually(t *testing.T, what string, cond func(context.Context) (bool, string)) {
	t.Helper()
	clustertest.Eventually(t, time.Minute, what, cond)
}
