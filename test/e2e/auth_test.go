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

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// withSenderAuthentication restarts the reconciler admitting only the
// tokens of the Foos' source's OIDC identity for the sink's audience (until
// the test ends), and starts an adapter of the Foos of ns that sends them,
// as eventing's controller sets a source up when authentication-oidc is
// on. The other adapters send
// no token: their events are refused. It returns once the adapter's watch
// runs (it sends nothing for what happened before): a change of Foo name
// (created here) was reconciled through it. It returns that Foo.
func withSenderAuthentication(t *testing.T, ns, name string) *samplesv1alpha1.Foo {
	t.Helper()
	ctx := context.Background()
	if err := localenv.OIDCIdentities(ctx, env.Kube, localenv.FoosIdentity); err != nil {
		t.Fatal(err)
	}
	if err := env.StopReconciler(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.StopReconciler()
		if err := env.StartReconciler(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if err := env.StartReconciler(ctx, "--oidc-audience="+localenv.OIDCAudience, "--oidc-subjects="+localenv.Subject(localenv.FoosIdentity)); err != nil {
		t.Fatal(err)
	}

	fooGVR := schema.GroupVersionResource{Group: "samplecontroller.knative.io", Version: "v1alpha1", Resource: "foos"}
	adapter, err := env.CP.StartAdapter("foos-oidc", localenv.Namespace, env.ReconcilerURL,
		controlplane.AdapterConfig{Namespaces: []string{ns}, Mode: "Resource", Resources: []controlplane.AdapterResource{{GVR: fooGVR}}},
		env.SourcesKubeconfig, localenv.AdapterOIDCEnv(localenv.FoosIdentity)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = adapter.Stop() })

	// The Foo's replicas are changed until a change is reconciled.
	probe := createFoo(t, newFoo(ns, name, name, 1))
	foos := env.Foos.SamplecontrollerV1alpha1().Foos(ns)
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, false, func(ctx context.Context) (bool, error) {
		if ok, _ := convergedFooNow(ctx, ns, name); ok && *probe.Spec.Replicas > 1 {
			return true, nil
		}
		probe.Spec.Replicas = ptr.Int32(*probe.Spec.Replicas%5 + 1)
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, *probe.Spec.Replicas)
		_, err := foos.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return false, err
	})
	if err != nil {
		t.Fatalf("no Foo change converged through the adapter's tokens: %v", err)
	}
	if probe, err = foos.Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	return probe
}

// tokenFor returns a token of service account sa (of the operator's
// namespace) for audience aud.
func tokenFor(t *testing.T, sa, aud string) string {
	t.Helper()
	token, err := localenv.Token(context.Background(), env.Kube, sa, aud)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// 13. With OIDC on, only the sources wake the reconciler: a real adapter
// sending real tokens of its OIDC identity is admitted; no token, an
// expired one, one for another audience (401) and one of another subject
// (403) are refused, and none of them is reconciled.
func TestOnlyTheSourcesMaySend(t *testing.T) {
	ctx := context.Background()
	audience, identity, subject := localenv.OIDCAudience, localenv.FoosIdentity, localenv.Subject(localenv.FoosIdentity)
	kube := env.Kube
	ns := namespace(t)
	// Admitted: the adapter's events, with its tokens, converge a Foo.
	victim := withSenderAuthentication(t, ns, "victim")

	// Its Deployment deleted by hand: the Deployments' adapter sends no
	// token, so nothing wakes the reconciler but what this test sends.
	deps := kube.AppsV1().Deployments(ns)
	if err := deps.Delete(ctx, "victim", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	victim.APIVersion, victim.Kind = samplesv1alpha1.SchemeGroupVersion.String(), "Foo"
	expired, err := env.CP.SignToken(map[string]any{"iss": env.CP.URL, "sub": subject, "aud": []string{audience},
		"iat": time.Now().Add(-2 * time.Hour).Unix(), "exp": time.Now().Add(-time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"expired", expired, http.StatusUnauthorized},
		{"for another audience", tokenFor(t, identity, "someone-else"), http.StatusUnauthorized},
		{"of another subject", tokenFor(t, "foo-reconciler", audience), http.StatusForbidden},
	} {
		code, body, err := env.SendObjectWithToken(ctx, tc.token, "add", victim, "foos")
		if err != nil || code != tc.want {
			t.Errorf("%s: answered %d %q, %v; want %d", tc.name, code, body, err, tc.want)
		}
	}
	if _, err := deps.Get(ctx, "victim", metav1.GetOptions{}); !apierrs.IsNotFound(err) {
		t.Fatalf("the Deployment came back (%v): a refused event was reconciled", err)
	}
	// A valid token: answered once reconciled.
	if code, body, err := env.SendObjectWithToken(ctx, tokenFor(t, identity, audience), "add", victim, "foos"); err != nil || code != http.StatusOK {
		t.Fatalf("valid token: answered %d %q, %v; want 200", code, body, err)
	}
	if _, err := deps.Get(ctx, "victim", metav1.GetOptions{}); err != nil {
		t.Errorf("the Deployment is not back after the admitted event: %v", err)
	}
}

// convergedFooNow tells whether Foo ns/name has its Deployment with its
// replicas and a status of its generation.
func convergedFooNow(ctx context.Context, ns, name string) (bool, error) {
	f, err := env.Foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	d, err := env.Kube.AppsV1().Deployments(ns).Get(ctx, f.Spec.DeploymentName, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	return f.Status.ObservedGeneration == f.Generation && *d.Spec.Replicas == *f.Spec.Replicas, nil
}
