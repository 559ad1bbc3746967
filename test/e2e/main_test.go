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

// Package e2e proves the operator's promises through the real parts: a
// loopback kube-apiserver, etcd and kube-controller-manager, the reconciler
// binary under its ServiceAccount, and the real ApiServerSource adapters
// delivering every event (see test/localenv). hack/build-tools.sh builds the
// binaries; hack/test.sh runs it first.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// env is the running Foo operator, with an admin client of Foos.
var env struct {
	*localenv.Env
	Foos versioned.Interface
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("e2e: skipped in -short mode")
		return 0
	}
	e, err := localenv.UpForTests(localenv.Foo)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	env.Env, env.Foos = e, versioned.NewForConfigOrDie(e.Config)
	return e.Finish(m.Run())
}

// namespace makes a namespace for one test and deletes it afterwards.
func namespace(t *testing.T) string {
	t.Helper()
	return clustertest.Namespace(t, env.Kube, "e2e-")
}

func newFoo(ns, name, deployment string, replicas int32) *samplesv1alpha1.Foo {
	return &samplesv1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       samplesv1alpha1.FooSpec{DeploymentName: deployment, Replicas: ptr.Int32(replicas)},
	}
}

func createFoo(t *testing.T, f *samplesv1alpha1.Foo) *samplesv1alpha1.Foo {
	t.Helper()
	f, err := env.Foos.SamplecontrollerV1alpha1().Foos(f.Namespace).Create(context.Background(), f, metav1.CreateOptions{})
	if err != nil {
		t.Fatal("creating Foo:", err)
	}
	return f
}

// eventually polls cond for up to a minute, failing the test with what
// cond last said.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	clustertest.Eventually(t, time.Minute, what, cond)
}

func getDeployment(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
	return env.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
}

func getFoo(ctx context.Context, ns, name string) (*samplesv1alpha1.Foo, error) {
	return env.Foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, name, metav1.GetOptions{})
}

// deploymentReplicas waits until the Deployment exists with want replicas.
func deploymentReplicas(t *testing.T, ns, name string, want int32) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	eventually(t, fmt.Sprintf("deployment %s/%s has %d replicas", ns, name, want), func(ctx context.Context) (bool, string) {
		var err error
		if d, err = getDeployment(ctx, ns, name); err != nil {
			return false, err.Error()
		}
		return d.Spec.Replicas != nil && *d.Spec.Replicas == want, fmt.Sprintf("replicas %v", ptrString(d.Spec.Replicas))
	})
	return d
}

func ptrString(p *int32) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
