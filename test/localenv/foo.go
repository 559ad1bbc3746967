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

package localenv

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/pkg/serverless"
	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// Namespace is where config/ puts the Foo operator's accounts.
const Namespace = "foo-operator"

// Foo is the Foo operator: cmd/foo-reconciler, config/'s manifests that a
// cluster without Knative can take, and its two ApiServerSources (Foos;
// Deployments owned by a Foo, Resource mode).
var Foo = Operator{
	Name:      "foo-reconciler",
	Main:      "./cmd/foo-reconciler",
	Namespace: Namespace,
	Manifests: []string{
		"config/100-namespace.yaml",
		"config/200-serviceaccounts.yaml",
		"config/200-clusterroles.yaml",
		"config/200-aggregated-clusterroles.yaml",
		"config/200-roles.yaml",
		"config/201-clusterrolebindings.yaml",
		"config/201-rolebindings.yaml",
		"config/300-foo.yaml",
		"config/400-config-observability.yaml",
	},
	CRDs:           []string{"crd/foos.samplecontroller.knative.io"},
	SourcesAccount: "foo-sources",
	Sources: []Source{
		// config/600-sources.yaml's source, but for its own adapter's pod:
		// no Eventing runs here to make one.
		{"foos", FooSource},
	},
	PingSource: "foo-resync",
	Canary:     fooCanary,
}

// FooSource is what the Foo operator's adapter watches (config/600-sources.yaml).
var FooSource = SourceOf(foo.Operator)

// SourceOf is what the ApiServerSource of op's config/ watches, but for its
// own adapter's pod (no Eventing runs here to make one): in every
// namespace, op's owners, each kind they own, only the objects with its
// owner label if it has one, each kind they track, and the ConfigMaps that
// configure op if it follows them.
func SourceOf(op serverless.Operator) controlplane.AdapterConfig {
	c := controlplane.AdapterConfig{AllNamespaces: true, Mode: "Resource", Resources: []controlplane.AdapterResource{{GVR: op.Owner.Resource}}}
	for _, o := range op.Owned {
		c.Resources = append(c.Resources, controlplane.AdapterResource{GVR: o.Resource, LabelSelector: o.OwnerLabel})
	}
	for _, k := range op.Tracked {
		c.Resources = append(c.Resources, controlplane.AdapterResource{GVR: k.Resource})
	}
	if op.FollowConfig {
		c.Resources = append(c.Resources, controlplane.AdapterResource{GVR: corev1.SchemeGroupVersion.WithResource("configmaps"),
			LabelSelector: serverless.ConfigLabel + "=" + op.Name})
	}
	for _, r := range op.ResyncOn {
		c.Resources = append(c.Resources, controlplane.AdapterResource{GVR: r.Resource, LabelSelector: r.Selector})
	}
	return c
}

// fooCanary proves the adapter delivers both kinds: a change of a canary
// Foo's replicas must reach its Deployment (a Foo event; the cold-start
// resync ran before the change), and a hand-scaled Deployment must be scaled
// back (a Deployment event).
func fooCanary(ctx context.Context, e *Env) error {
	fc, err := versioned.NewForConfig(e.Config)
	if err != nil {
		return err
	}
	foos := fc.SamplecontrollerV1alpha1().Foos(Namespace)
	deps := e.Kube.AppsV1().Deployments(Namespace)
	canary := &samplesv1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Name: "canary-" + uuid.NewString()[:8]},
		Spec:       samplesv1alpha1.FooSpec{DeploymentName: "canary", Replicas: ptr.Int32(1)},
	}
	if _, err := foos.Create(ctx, canary, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer func() { _ = foos.Delete(context.WithoutCancel(ctx), canary.Name, metav1.DeleteOptions{}) }()

	replicas := int32(1)
	deploymentHas := func() bool {
		d, err := deps.Get(ctx, "canary", metav1.GetOptions{})
		return err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas == replicas
	}
	err = Repeat(ctx, func(int) error {
		replicas++
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		_, err := foos.Patch(ctx, canary.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}, deploymentHas)
	if err != nil {
		return fmt.Errorf("the Foo adapter delivers nothing: %w", err)
	}
	err = Repeat(ctx, func(i int) error {
		// A different value each time: an unchanged object makes no event.
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, 40+i)
		_, err := deps.Patch(ctx, "canary", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}, deploymentHas)
	if err != nil {
		return fmt.Errorf("the Deployment adapter delivers nothing: %w", err)
	}
	return nil
}
