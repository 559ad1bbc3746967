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

// Package e2e runs the example Bar operator through the real parts, on
// test/localenv as the Foo operator's e2e does: a loopback kube-apiserver, etcd and
// kube-controller-manager, the bar-reconciler binary under its
// ServiceAccount with exactly config/'s roles, and the real ApiServerSource
// adapters (Bars; ConfigMaps a Bar controls) delivering every event.
package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	examplev1alpha1 "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/apis/example/v1alpha1"
	"github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/reconciler/bar"
	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// operatorNamespace is config/'s namespace.
const operatorNamespace = "bar-operator"

// Bar is the Bar operator, as localenv runs it: config/'s manifests that a
// cluster without Knative can take, and its two ApiServerSources (Bars;
// ConfigMaps a Bar controls).
var Bar = localenv.Operator{
	Name:      "bar-reconciler",
	Main:      "./examples/bar-operator/cmd/bar-reconciler",
	Namespace: operatorNamespace,
	Manifests: localenv.Files("examples/bar-operator/config/", "100-namespace.yaml", "200-serviceaccounts.yaml", "200-clusterroles.yaml",
		"200-roles.yaml", "201-clusterrolebindings.yaml", "201-rolebindings.yaml", "300-bar.yaml", "400-config-observability.yaml"),
	CRDs:           []string{"crd/bars.example.frugal-operator.dev"},
	SourcesAccount: "bar-sources",
	Sources: []localenv.Source{
		// config/600-sources.yaml's source, but for its own ApiServerSource:
		// no Eventing runs here to make one.
		{Name: "bars", Config: localenv.SourceOf(bar.Operator)},
	},
	PingSource: "bar-resync",
	Canary:     canary,
}

// env is the running Bar operator, with an admin client of Bars.
var env struct {
	*localenv.Env
	bars versioned.Interface
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	e, err := localenv.UpForTests(Bar)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	env.Env, env.bars = e, versioned.NewForConfigOrDie(e.Config)
	return e.Finish(m.Run())
}

// canary proves both adapters deliver: a canary Bar's data must reach its
// ConfigMap (the Bar adapter), and a hand-edited ConfigMap must be reverted
// (the ConfigMap adapter).
func canary(ctx context.Context, e *localenv.Env) error {
	bars := versioned.NewForConfigOrDie(e.Config).ExampleV1alpha1().Bars(operatorNamespace)
	cms := e.Kube.CoreV1().ConfigMaps(operatorNamespace)
	c := &examplev1alpha1.Bar{ObjectMeta: metav1.ObjectMeta{Name: "canary"}, Spec: examplev1alpha1.BarSpec{Data: map[string]string{"n": "0"}}}
	if _, err := bars.Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrs.IsAlreadyExists(err) {
		return err
	}
	want := "0"
	holds := func() bool {
		cm, err := cms.Get(ctx, "canary", metav1.GetOptions{})
		return err == nil && cm.Data["n"] == want && len(cm.Data) == 1
	}
	if err := localenv.Repeat(ctx, func(i int) error {
		want = strconv.Itoa(i + 1)
		_, err := bars.Patch(ctx, "canary", types.MergePatchType, []byte(`{"spec":{"data":{"n":"`+want+`"}}}`), metav1.PatchOptions{})
		return err
	}, holds); err != nil {
		return fmt.Errorf("the Bar adapter delivers nothing: %w", err)
	}
	if err := localenv.Repeat(ctx, func(i int) error {
		_, err := cms.Patch(ctx, "canary", types.MergePatchType, []byte(`{"data":{"extra":"`+strconv.Itoa(i)+`"}}`), metav1.PatchOptions{})
		return err
	}, holds); err != nil {
		return fmt.Errorf("the ConfigMap adapter delivers nothing: %w", err)
	}
	return nil
}

// namespace makes a namespace for one test, deleted when it ends.
func namespace(t *testing.T) string {
	t.Helper()
	return clustertest.Namespace(t, env.Kube, "bar-e2e-")
}

// eventually polls cond until it holds, failing the test after a minute
// with cond's last words.
func eventually(t *testing.T, what string, cond func(context.Context) (bool, string)) {
	t.Helper()
	clustertest.Eventually(t, time.Minute, what, cond)
}

// resync delivers PingSource's event and requires a 200: every Bar that
// needed work was reconciled.
func resync(t *testing.T) {
	t.Helper()
	if _, err := env.Resync(context.Background()); err != nil {
		t.Fatal("resync:", err)
	}
}
