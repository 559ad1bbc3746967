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
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/controlplane"
	"github.com/frugal-operator/foo-operator/test/localenv"
)

// 4b. Sender authentication on real Knative, set up as docs/trust-model.md says:
// eventing's authentication-oidc on, the sources' sinks given the
// reconciler's audience, the reconciler admitting only the sources' OIDC
// identities. Foos converge through the real adapters' tokens, and a burst
// of new Foos makes no GET of a Foo: the Foos' adapter's adds stand in for
// the reads (the audit log). Everything is put back afterwards.
func TestSenderAuthentication(t *testing.T) {
	ctx := context.Background()
	setOIDC := func(state string) {
		t.Helper()
		patch := fmt.Sprintf(`{"data":{"authentication-oidc":%q}}`, state)
		if _, err := kube.CoreV1().ConfigMaps("knative-eventing").Patch(ctx, "config-features", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sources := []struct {
		gvr            schema.GroupVersionResource
		name, identity string
	}{
		{sourceGVR, "foos", localenv.FoosIdentity},
		{pingGVR, "foo-resync", localenv.ResyncIdentity},
	}
	setAudience := func(audience string) {
		t.Helper()
		value := "null"
		if audience != "" {
			value = fmt.Sprintf("%q", audience)
		}
		for _, s := range sources {
			patch := fmt.Sprintf(`{"spec":{"sink":{"audience":%s}}}`, value)
			if _, err := dyn.Resource(s.gvr).Namespace(system).Patch(ctx, s.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	env := reconcilerEnv(t)
	// setEnv sets the container's env, and min-scale: this test keeps one
	// pod through the burst, so that no cold start's resync reconciles a
	// Foo (from a read) before its add event arrives.
	setEnv := func(env []any, minScale string) {
		t.Helper()
		setReconciler(t, env, map[string]string{"min-scale": minScale})
	}
	allReady := func() {
		t.Helper()
		clustertest.Eventually(t, 3*time.Minute, "the Knative Service is Ready", func(ctx context.Context) (bool, string) {
			return ready(ctx, ksvcGVR, system, service)
		})
		for _, s := range sources {
			clustertest.Eventually(t, 3*time.Minute, s.name+" is Ready", func(ctx context.Context) (bool, string) {
				return ready(ctx, s.gvr, system, s.name)
			})
		}
	}
	t.Cleanup(func() {
		setEnv(env, "0")
		setAudience("")
		setOIDC("disabled")
		allReady()
	})

	setOIDC("enabled")
	setAudience(localenv.OIDCAudience)
	subjects := make([]string, 0, len(sources))
	for _, s := range sources {
		subjects = append(subjects, localenv.Subject(s.identity))
	}
	setEnv(append(append([]any{}, env...),
		map[string]any{"name": "OIDC_AUDIENCE", "value": localenv.OIDCAudience},
		map[string]any{"name": "OIDC_SUBJECTS", "value": strings.Join(subjects, ",")}), "1")
	allReady()
	// Eventing names the sources' identities as docs/trust-model.md says.
	for _, s := range sources {
		clustertest.Eventually(t, 3*time.Minute, s.name+"'s OIDC identity", func(ctx context.Context) (bool, string) {
			u, err := dyn.Resource(s.gvr).Namespace(system).Get(ctx, s.name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			sa, _, _ := unstructured.NestedString(u.Object, "status", "auth", "serviceAccountName")
			return sa == s.identity, fmt.Sprintf("status.auth.serviceAccountName %q, want %q", sa, s.identity)
		})
	}

	ns := namespace(t) // returns once the (token-sending) adapters deliver
	st, err := os.Stat(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	for i := range n {
		createFoo(t, newFoo(ns, fmt.Sprintf("foo-%d", i), fmt.Sprintf("dep-%d", i), 0))
	}
	clustertest.Eventually(t, 3*time.Minute, "the Foos converged", func(ctx context.Context) (bool, string) { return converged(ctx, ns, n) })
	// Each Foo's first requests: its Deployment's create, then its status
	// write; nothing read first. (What follows, the reconciles of its
	// Deployment's status changes, reads the Foo and the Deployment.)
	clustertest.Eventually(t, time.Minute, "each Foo's add reconciled without a read", func(context.Context) (bool, string) {
		events, _, err := controlplane.ReadAuditLog(auditLog, st.Size(), "system:serviceaccount:"+system+":"+service, foo.AgentName)
		if err != nil {
			return false, err.Error()
		}
		first := map[string][]string{}
		lists := 0 // resyncs (a cold start's, the ping's) that listed the Foos
		for _, e := range events {
			ref := e.ObjectRef
			if ref != nil && ref.Namespace == "" && e.Request() == "list samplecontroller.knative.io/foos" {
				lists++
			}
			if ref == nil || ref.Namespace != ns || ref.Resource == "events" {
				continue
			}
			name := strings.Replace(ref.Name, "dep-", "foo-", 1)
			if len(first[name]) < 2 {
				first[name] = append(first[name], e.Request())
			}
		}
		for i := range n {
			name := fmt.Sprintf("foo-%d", i)
			if got := first[name]; len(got) < 2 || got[0] != "create apps/deployments" || got[1] != "update samplecontroller.knative.io/foos/status" {
				return false, fmt.Sprintf("%s's first requests: %v, want the Deployment's create, then the status (the Foos listed by %d resyncs meanwhile)", name, got, lists)
			}
		}
		return true, ""
	})
}
