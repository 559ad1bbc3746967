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

package containersource

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	"knative.dev/pkg/configmap"
	"knative.dev/pkg/controller"

	"knative.dev/eventing/pkg/apis/feature"
	eventingscheme "knative.dev/eventing/pkg/client/clientset/versioned/scheme"
	"knative.dev/eventing/pkg/reconciler/containersource/resources"
	. "knative.dev/eventing/pkg/reconciler/testing/v1" //nolint:revive,staticcheck // eventing's object builders

	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync/resynctest"

	"github.com/frugal-operator/foo-operator/test/upstream"
)

// The files that ../../../UPSTREAM lists are eventing's, unchanged: only
// serverless.go, this test, the command, the rest of config/ and the e2e
// were added.
func TestTheFilesAreEventingsUnchanged(t *testing.T) {
	n, err := upstream.Unchanged(filepath.Join("..", "..", ".."), "knative.dev/eventing")
	if err != nil {
		t.Error(err)
	}
	if n != 6 {
		t.Errorf("UPSTREAM lists %d files, want the 4 of the reconciler and the 2 CRDs", n)
	}
	if got := resources.Labels("x")[ownerLabel]; got != "x" {
		t.Errorf("resources.Labels puts %q in %s, want the ContainerSource's name", got, ownerLabel)
	}
}

// The resync runs the unchanged reconciler over what it lists: a converged
// ContainerSource needs nothing; one whose SinkBinding or Deployment is
// missing, or whose Deployment drifted, needs work.
func TestResyncFindsWhatNeedsWork(t *testing.T) {
	spec := WithContainerSourceSpec(makeContainerSourceSpec(sinkDest))
	bare := NewContainerSource(sourceName, testNS, spec, WithContainerSourceUID(sourceUID))
	sb, dep := makeSinkBinding(bare, &conditionTrue), makeDeployment(bare, &conditionTrue)
	// As "successfully reconciled and ready" leaves it.
	reconciled := NewContainerSource(sourceName, testNS, spec, WithContainerSourceUID(sourceUID),
		WithContainerSourceObjectMetaGeneration(generation),
		WithInitContainerSourceConditions,
		WithContainerSourceStatusObservedGeneration(generation),
		WithContainerSourcePropagateSinkbindingStatus(makeSinkBindingStatus(&conditionTrue)),
		WithContainerSourcePropagateReceiveAdapterStatus(dep))
	drifted := dep.DeepCopy()
	drifted.Spec.Template.Spec.Containers[0].Image = "another"

	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{kubescheme.AddToScheme, eventingscheme.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		objects []runtime.Object
		want    bool
	}{
		{"converged", []runtime.Object{reconciled, sb, dep}, false},
		{"no SinkBinding", []runtime.Object{reconciled, dep}, true},
		{"no Deployment", []runtime.Object{reconciled, sb}, true},
		{"a drifted Deployment", []runtime.Object{reconciled, sb, drifted}, true},
		{"never reconciled", []runtime.Object{bare, sb, dep}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := resynctest.APIServer(s, tc.objects...)
			if err != nil {
				t.Fatal(err)
			}
			r, err := resync.New(context.Background(), cfg, Operator.ResyncKinds(), func(ctx context.Context) controller.Reconciler {
				return New(ctx, configmap.NewStaticWatcher(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: feature.FlagsConfigName}})).Reconciler
			})
			if err != nil {
				t.Fatal(err)
			}
			work, _, err := r.KeysNeedingWork(context.Background())
			if err != nil {
				t.Fatal("KeysNeedingWork() =", err)
			}
			want := []types.NamespacedName(nil)
			if tc.want {
				want = []types.NamespacedName{{Namespace: testNS, Name: sourceName}}
			}
			if len(work) != len(want) || (len(want) == 1 && work[0] != want[0]) {
				t.Errorf("work = %v, want %v", work, want)
			}
		})
	}
}
