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

package bar

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	clientgotesting "k8s.io/client-go/testing"
	"knative.dev/pkg/apis"
	fakekubeclient "knative.dev/pkg/client/injection/kube/client/fake"
	. "knative.dev/pkg/reconciler/testing" //nolint:revive,staticcheck // TableTest vocabulary

	examplev1alpha1 "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/apis/example/v1alpha1"
	barscheme "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/client/clientset/versioned/scheme"
	fakebarclient "github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/client/injection/client/fake"
	"github.com/frugal-operator/foo-operator/examples/bar-operator/pkg/reconciler/bar/resources"
	"github.com/frugal-operator/foo-operator/pkg/serverless/reconcilertest"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
	"github.com/frugal-operator/foo-operator/pkg/serverless/resync/resynctest"
	"github.com/frugal-operator/foo-operator/pkg/serverless/serverlesstest"
)

const (
	ns      = "ns"
	barName = "bar"
	key     = ns + "/" + barName
)

type barOption func(*examplev1alpha1.Bar)

func newBar(opts ...barOption) *examplev1alpha1.Bar {
	b := &examplev1alpha1.Bar{
		ObjectMeta: metav1.ObjectMeta{Name: barName, Namespace: ns, UID: "bar-uid", Generation: 1},
		Spec:       examplev1alpha1.BarSpec{Data: map[string]string{"greeting": "hello"}},
	}
	for _, o := range opts {
		o(b)
	}
	return b
}

func withData(d map[string]string) barOption {
	return func(b *examplev1alpha1.Bar) { b.Spec.Data = d }
}

// reconciled: the status the reconciler writes when the ConfigMap holds the data.
func reconciled(b *examplev1alpha1.Bar) {
	b.Status.InitializeConditions()
	b.Status.MarkConfigMapReady(b.Name)
	b.Status.ObservedGeneration = b.Generation
}

func withStatus(mark func(*examplev1alpha1.BarStatus)) barOption {
	return func(b *examplev1alpha1.Bar) {
		b.Status.InitializeConditions()
		mark(&b.Status)
		b.Status.ObservedGeneration = b.Generation
	}
}

func configMap(b *examplev1alpha1.Bar, edit ...func(*corev1.ConfigMap)) *corev1.ConfigMap {
	cm := resources.MakeConfigMap(b)
	for _, e := range edit {
		e(cm)
	}
	return cm
}

func TestReconcile(t *testing.T) {
	reconcileRows().Test(t, reconcilertest.MakeFactory(NewReconciler,
		reconcilertest.Fake{
			Holds: func(o runtime.Object) bool { _, ok := o.(*examplev1alpha1.Bar); return ok },
			With: func(ctx context.Context, objects ...runtime.Object) (context.Context, clientgotesting.FakeClient) {
				return fakebarclient.With(ctx, objects...)
			},
		},
		reconcilertest.Fake{With: func(ctx context.Context, objects ...runtime.Object) (context.Context, clientgotesting.FakeClient) {
			return fakekubeclient.With(ctx, objects...)
		}},
	))
}

// reconcileRows are ReconcileKind's rows: TestReconcile runs them, and
// TestResyncFindsTheWorkOfEveryRow holds the resync to them.
func reconcileRows() TableTest {
	owned := configMap(newBar())
	foreign := configMap(newBar(), func(cm *corev1.ConfigMap) { cm.OwnerReferences = nil })
	created := Eventf(corev1.EventTypeNormal, "ConfigMapCreated", "Created configmap %q", barName)
	updated := Eventf(corev1.EventTypeNormal, "ConfigMapUpdated", "Updated configmap %q", barName)
	return TableTest{{
		Name: "bar not found",
		Key:  key,
	}, {
		Name:              "new Bar: its ConfigMap is created without reading first",
		Key:               key,
		Objects:           []runtime.Object{newBar()},
		WithReactors:      []clientgotesting.ReactionFunc{InduceFailure("get", "configmaps")},
		WantCreates:       []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{Object: newBar(reconciled)}},
		WantEvents:        []string{created},
	}, {
		Name:    "converged: no write",
		Key:     key,
		Objects: []runtime.Object{newBar(reconciled), owned},
	}, {
		Name:        "reconciled Bar whose ConfigMap is gone: read, then recreate",
		Key:         key,
		Objects:     []runtime.Object{newBar(reconciled)},
		WantCreates: []runtime.Object{owned},
		WantEvents:  []string{created},
	}, {
		Name:        "data changed, a key added by hand, binary data: all drift",
		Key:         key,
		Objects:     []runtime.Object{newBar(reconciled), configMap(newBar(withData(map[string]string{"greeting": "bye", "extra": "x"})), func(cm *corev1.ConfigMap) { cm.BinaryData = map[string][]byte{"b": {1}} })},
		WantUpdates: []clientgotesting.UpdateActionImpl{{Object: owned}},
		WantEvents:  []string{updated},
	}, {
		Name:        "our label removed: restored, others' kept",
		Key:         key,
		Objects:     []runtime.Object{newBar(reconciled), configMap(newBar(), func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"team": "a"} })},
		WantUpdates: []clientgotesting.UpdateActionImpl{{Object: configMap(newBar(), func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"team": "a", resources.BarLabelKey: barName} })}},
		WantEvents:  []string{updated},
	}, {
		Name:              "new Bar whose ConfigMap exists (status never written): AlreadyExists, read, converge",
		Key:               key,
		Objects:           []runtime.Object{newBar(), configMap(newBar(withData(nil)))},
		WantCreates:       []runtime.Object{owned},
		WantUpdates:       []clientgotesting.UpdateActionImpl{{Object: owned}},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{Object: newBar(reconciled)}},
		WantEvents:        []string{updated},
	}, {
		Name:    "ConfigMap not owned: report, no retry",
		Key:     key,
		Objects: []runtime.Object{newBar(reconciled), foreign},
		WantErr: true,
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: newBar(withStatus(func(s *examplev1alpha1.BarStatus) { s.MarkConfigMapNotOwned(barName) })),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeWarning, "ErrResourceExists", "Resource %q already exists and is not managed by Bar", barName)},
	}, {
		Name:         "create fails: retried",
		Key:          key,
		Objects:      []runtime.Object{newBar()},
		WithReactors: []clientgotesting.ReactionFunc{InduceFailure("create", "configmaps")},
		WantErr:      true,
		WantCreates:  []runtime.Object{owned},
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			// What the generated reconciler reports of a failed reconcile.
			Object: newBar(withStatus(func(s *examplev1alpha1.BarStatus) {
				newBar().GetConditionSet().Manage(s).MarkUnknown(apis.ConditionReady,
					"NewObservedGenFailure", "unsuccessfully observed a new generation")
			})),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeWarning, "InternalError",
			"failed to read or create configmap %q: inducing failure for create configmaps", barName)},
	}, {
		Name:    "invalid spec: report, no retry",
		Key:     key,
		Objects: []runtime.Object{newBar(withData(map[string]string{"not a key": "x"}))},
		WantErr: true,
		WantStatusUpdates: []clientgotesting.UpdateActionImpl{{
			Object: newBar(withData(map[string]string{"not a key": "x"}), withStatus(func(s *examplev1alpha1.BarStatus) {
				s.MarkSpecInvalid(newBar(withData(map[string]string{"not a key": "x"})).Validate(context.Background()).Error())
			})),
		}},
		WantEvents: []string{Eventf(corev1.EventTypeWarning, "InvalidSpec", "Invalid spec: %v",
			newBar(withData(map[string]string{"not a key": "x"})).Validate(context.Background()))},
	}}
}

// The resync finds the Bars whose reconcile would write, and only those.
func TestResyncFindsWhatNeedsWork(t *testing.T) {
	invalid := map[string]string{"not a key": ""}
	invalidMessage := newBar(withData(invalid)).Validate(context.Background()).Error()
	tests := []struct {
		name string
		bar  *examplev1alpha1.Bar
		cm   *corev1.ConfigMap
		want bool
	}{
		{"converged", newBar(reconciled), configMap(newBar()), false},
		{"new generation", newBar(reconciled, func(b *examplev1alpha1.Bar) { b.Generation = 2 }), configMap(newBar()), true},
		{"missing", newBar(reconciled), nil, true},
		{"foreign", newBar(reconciled), configMap(newBar(), func(cm *corev1.ConfigMap) { cm.OwnerReferences = nil }), true},
		{"drifted", newBar(reconciled), configMap(newBar(withData(map[string]string{"a": "b"}))), true},
		{"status behind", newBar(withStatus(func(s *examplev1alpha1.BarStatus) { s.MarkConfigMapNotOwned(barName) })), configMap(newBar()), true},
		{"being deleted", newBar(func(b *examplev1alpha1.Bar) { b.DeletionTimestamp = &metav1.Time{Time: time.Now()} }), nil, false},
		{"invalid, reported", newBar(withData(invalid), withStatus(func(s *examplev1alpha1.BarStatus) { s.MarkSpecInvalid(invalidMessage) })), nil, false},
		{"invalid, reported otherwise", newBar(withData(invalid), withStatus(func(s *examplev1alpha1.BarStatus) { s.MarkSpecInvalid("bad") })), nil, true},
		{"invalid, not reported", newBar(withData(invalid), reconciled), nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objects := []runtime.Object{tc.bar}
			if tc.cm != nil {
				objects = append(objects, tc.cm)
			}
			cfg, err := resynctest.APIServer(testScheme(t), objects...)
			if err != nil {
				t.Fatal(err)
			}
			r, err := resync.New(context.Background(), cfg, Operator.ResyncKinds(), NewReconciler)
			if err != nil {
				t.Fatal(err)
			}
			work, _, err := r.KeysNeedingWork(context.Background())
			if err != nil {
				t.Fatal("KeysNeedingWork() =", err)
			}
			if got := len(work) == 1; got != tc.want {
				t.Errorf("needs work = %v (%v), want %v", got, work, tc.want)
			}
		})
	}
}

func testScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := kubescheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := barscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The resync cannot miss work that a reconcile would do: over every row of
// ReconcileKind's table, the resync, listing the row's objects and running
// the reconciler over them, names the row's Bar whenever the reconcile
// writes anything.
// Every Settled reason is one that a row of ReconcileKind's table sets.
func TestSettledReasonsAreSet(t *testing.T) {
	if err := serverlesstest.CheckSettled(settled, reconcileRows()); err != nil {
		t.Error(err)
	}
}

func TestResyncFindsTheWorkOfEveryRow(t *testing.T) {
	resynctest.FindsEveryRowsWork(t, reconcileRows(), testScheme(t), Operator.ResyncKinds(), NewReconciler)
}
