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
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "knative.dev/eventing/pkg/apis/sources/v1"

	"github.com/frugal-operator/foo-operator/examples/apiserversource/pkg/reconciler/apiserversource"
	"github.com/frugal-operator/foo-operator/pkg/serverless"
	"github.com/frugal-operator/foo-operator/test/clustertest"
	"github.com/frugal-operator/foo-operator/test/controlplane"
)

func createSource(t *testing.T, s *v1.ApiServerSource) {
	t.Helper()
	if _, err := env.eventing.SourcesV1().ApiServerSources(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func broker(t *testing.T, ns, name, url string) {
	t.Helper()
	if err := setBroker(context.Background(), env.eventing, ns, name, url); err != nil {
		t.Fatal(err)
	}
}

// converged tells whether ApiServerSource ns/name has its adapter's
// Deployment, controlled by it, sending to sink, and a status that reports
// its generation and that sink.
func converged(ctx context.Context, ns, name, sink string) (bool, string) {
	s, err := env.eventing.SourcesV1().ApiServerSources(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	d, err := adapter(ctx, env.Kube.AppsV1().Deployments(ns), name)
	switch {
	case err != nil:
		return false, err.Error()
	case !metav1.IsControlledBy(d, s):
		return false, "the Deployment is not controlled by the ApiServerSource"
	case sinkOf(d) != sink:
		return false, "the adapter sends to " + sinkOf(d)
	case s.Status.SinkURI.String() != sink:
		return false, "status reports sink " + s.Status.SinkURI.String()
	case s.Status.ObservedGeneration != s.Generation:
		return false, fmt.Sprintf("status reports generation %d of %d", s.Status.ObservedGeneration, s.Generation)
	}
	return true, ""
}

// A new address of the Broker a source sends to reaches the source's
// adapter by the Broker's event (the tracker): no resync runs here, and
// the source itself does not change.
func TestTheSinksNewAddressReachesTheAdapter(t *testing.T) {
	ns := namespace(t)
	broker(t, ns, "sink", "http://one.example.test")
	createSource(t, newSource(ns, "tracking", "sink"))
	eventually(t, "the ApiServerSource converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "tracking", "http://one.example.test")
	})
	start := time.Now()
	broker(t, ns, "sink", "http://two.example.test")
	eventually(t, "the Broker's new address in K_SINK", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "tracking", "http://two.example.test")
	})
	t.Logf("the new address reached the adapter's Deployment %v after the Broker's status changed", time.Since(start).Round(time.Millisecond))
}

// A source whose sink is missing waits for it, and is reconciled when it
// appears: the tracker followed the reference before the Broker existed.
func TestAMissingSinkIsWaitedFor(t *testing.T) {
	ns := namespace(t)
	createSource(t, newSource(ns, "early", "late"))
	eventually(t, "the ApiServerSource reports no sink", func(ctx context.Context) (bool, string) {
		s, err := env.eventing.SourcesV1().ApiServerSources(ns).Get(ctx, "early", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := s.Status.GetCondition(v1.ApiServerConditionSinkProvided)
		return c != nil && c.IsFalse(), fmt.Sprintf("SinkProvided %v", c)
	})
	broker(t, ns, "late", "http://late.example.test")
	eventually(t, "the ApiServerSource converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "early", "http://late.example.test")
	})
}

// A deleted adapter Deployment is made again.
func TestTheDeletedAdapterIsMadeAgain(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	broker(t, ns, "sink", "http://sink.example.test")
	createSource(t, newSource(ns, "restored", "sink"))
	eventually(t, "the ApiServerSource converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "restored", "http://sink.example.test")
	})
	d, err := adapter(ctx, env.Kube.AppsV1().Deployments(ns), "restored")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Kube.AppsV1().Deployments(ns).Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment made again", func(ctx context.Context) (bool, string) {
		n, err := adapter(ctx, env.Kube.AppsV1().Deployments(ns), "restored")
		if err != nil || n.UID == d.UID {
			return false, fmt.Sprintf("%v", err)
		}
		return converged(ctx, ns, "restored", "http://sink.example.test")
	})
}

// A source with a namespaceSelector watches the namespaces it selects, as
// they were when it was last reconciled (a new namespace reaches it at the
// next event of the source or of its Deployment, or at the ping).
func TestTheSelectedNamespacesAreWatched(t *testing.T) {
	ctx := context.Background()
	ns, other := namespace(t), namespace(t)
	for _, n := range []string{ns, other} {
		if _, err := env.Kube.CoreV1().Namespaces().Patch(ctx, n, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"watched-by":"`+ns+`"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	broker(t, ns, "sink", "http://sink.example.test")
	s := newSource(ns, "selecting", "sink")
	s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"watched-by": ns}}
	createSource(t, s)
	want := fmt.Sprint(sorted(ns, other))
	eventually(t, "the ApiServerSource converged watching both namespaces", func(ctx context.Context) (bool, string) {
		if ok, msg := converged(ctx, ns, "selecting", "http://sink.example.test"); !ok {
			return false, msg
		}
		s, err := env.eventing.SourcesV1().ApiServerSources(ns).Get(ctx, "selecting", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return fmt.Sprint(s.Status.Namespaces) == want, fmt.Sprintf("namespaces %v, want %s", s.Status.Namespaces, want)
	})
}

func sorted(s ...string) []string {
	sort.Strings(s)
	return s
}

// A source without the skip-permissions-check annotation is deployed once
// an access review finds its ServiceAccount may watch what it names.
func TestTheAccessIsReviewed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "watcher"}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "watcher"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "watcher"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "watcher"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "watcher", Namespace: ns}}}
	if _, err := env.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	broker(t, ns, "sink", "http://sink.example.test")
	s := newSource(ns, "reviewed", "sink")
	s.Annotations = nil
	s.Spec.ServiceAccountName = "watcher"
	createSource(t, s)
	eventually(t, "the ApiServerSource converged with sufficient permissions", func(ctx context.Context) (bool, string) {
		if ok, msg := converged(ctx, ns, "reviewed", "http://sink.example.test"); !ok {
			return false, msg
		}
		s, err := env.eventing.SourcesV1().ApiServerSources(ns).Get(ctx, "reviewed", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := s.Status.GetCondition(v1.ApiServerConditionSufficientPermissions)
		return c != nil && c.IsTrue(), fmt.Sprintf("SufficientPermissions %v", c)
	})
}

// The ping's resync of a converged source changes nothing. It does not
// only read: eventing's reconciler updates the adapter's Deployment on
// every reconcile (its comparison of the container's env fails on the
// fieldRef.apiVersion the API server defaults), so the dry run finds work
// for every source and each is reconciled; the API server takes those
// updates as no-ops.
func TestAConvergedResyncChangesNothing(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	broker(t, ns, "sink", "http://sink.example.test")
	createSource(t, newSource(ns, "steady", "sink"))
	eventually(t, "the ApiServerSource converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "steady", "http://sink.example.test")
	})
	versions := func() string {
		s, err := env.eventing.SourcesV1().ApiServerSources(ns).Get(ctx, "steady", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := adapter(ctx, env.Kube.AppsV1().Deployments(ns), "steady")
		if err != nil {
			t.Fatal(err)
		}
		return "source " + s.ResourceVersion + ", Deployment " + d.ResourceVersion
	}
	before := versions()
	_, from, err := env.CP.AuditEvents(0, reconcilerUser, apiserversource.AgentName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Resync(ctx); err != nil {
		t.Fatal(err)
	}
	if after := versions(); after != before {
		t.Errorf("the resync changed a converged source: %s, then %s", before, after)
	}
	events, _, err := env.CP.AuditEvents(from, reconcilerUser, apiserversource.AgentName)
	if err != nil {
		t.Fatal(err)
	}
	updates := 0
	for _, e := range events {
		if e.ObjectRef != nil && e.ObjectRef.Namespace == ns && e.Verb == "update" && e.ObjectRef.Resource == "deployments" {
			updates++
		}
	}
	t.Logf("from before the ping to its answer, the reconciler updated the converged source's Deployment %d times, each a no-op", updates)
}

// ApiServerSources whose reconciles fail (a quota refuses their
// Deployments) when the reconciler goes, as at zero, are run again
// requeue.Retry later, through the requeue schedule.
func TestAFailureOutlivesTheReconciler(t *testing.T) {
	ns := namespace(t)
	broker(t, ns, "sink", "http://sink.example.test")
	lift := clustertest.NoRoomFor(t, env.Kube, ns, "count/deployments.apps", func(ctx context.Context) error {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}}}},
		}}
		_, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	env.FailuresOutliveTheReconciler(t, ns, []string{"one", "two"},
		func(name string) { createSource(t, newSource(ns, name, "sink")) },
		lift,
		func(name string) {
			eventually(t, name+" converged", func(ctx context.Context) (bool, string) {
				return converged(ctx, ns, name, "http://sink.example.test")
			})
		})
}

// A change of config-logging, the reconciler's (labelled for it), reaches
// every adapter's K_LOGGING_CONFIG by the ConfigMap's event, no pod
// restarted and no ping sent; once it is deleted, eventing's default
// applies again.
func TestAConfigLoggingChangeReachesTheAdapters(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	broker(t, ns, "sink", "http://sink.example.test")
	createSource(t, newSource(ns, "logging", "sink"))
	eventually(t, "the ApiServerSource converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "logging", "http://sink.example.test")
	})
	loggingOf := func(ctx context.Context) string {
		d, err := adapter(ctx, env.Kube.AppsV1().Deployments(ns), "logging")
		if err != nil {
			return err.Error()
		}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "K_LOGGING_CONFIG" {
				return e.Value
			}
		}
		return ""
	}
	const marker = "e2e-marker"
	if strings.Contains(loggingOf(ctx), marker) {
		t.Fatal("the marker is in K_LOGGING_CONFIG before config-logging has it: the test proves nothing")
	}
	pod := env.Reconciler()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "config-logging", Namespace: operatorNamespace,
			Labels: map[string]string{serverless.ConfigLabel: apiserversource.AgentName}},
		Data: map[string]string{"zap-logger-config": `{"level":"info","encoderConfig":{"messageKey":"` + marker + `"}}`},
	}
	start := time.Now()
	if _, err := env.Kube.CoreV1().ConfigMaps(operatorNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new logging configuration in K_LOGGING_CONFIG", func(ctx context.Context) (bool, string) {
		l := loggingOf(ctx)
		return strings.Contains(l, marker), "K_LOGGING_CONFIG " + l
	})
	t.Logf("config-logging reached the adapter's Deployment %v after it was made", time.Since(start).Round(time.Millisecond))
	if err := env.Kube.CoreV1().ConfigMaps(operatorNamespace).Delete(ctx, "config-logging", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the default logging configuration in K_LOGGING_CONFIG", func(ctx context.Context) (bool, string) {
		l := loggingOf(ctx)
		return !strings.Contains(l, marker), "K_LOGGING_CONFIG " + l
	})
	if env.Reconciler() != pod {
		t.Error("the reconciler was restarted: the test proves nothing")
	}
}

// A trust bundle made in a source's namespace is mounted in its adapter,
// and unmounted once deleted: the ConfigMap's events resync the sources,
// as eventing's controller resyncs them on its trust-bundle informer.
// Nothing else changes meanwhile, so without those events the adapter
// would wait for the hourly ping.
func TestATrustBundleReachesTheAdapters(t *testing.T) {
	ctx := context.Background()
	from, err := controlplane.AuditLogEnd(env.CP.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	broker(t, ns, "sink", "http://sink.example.test")
	createSource(t, newSource(ns, "bundled", "sink"))
	eventually(t, "the ApiServerSource converged", func(ctx context.Context) (bool, string) {
		return converged(ctx, ns, "bundled", "http://sink.example.test")
	})
	// Each event of the source and its Broker may queue one more reconcile,
	// which would list the bundle if made meanwhile: the bundle comes once
	// the reconciler has read nothing of the namespace for half a second.
	eventually(t, "the reconciler done with the namespace", func(context.Context) (bool, string) {
		events, _, err := env.CP.AuditEvents(from, reconcilerUser, "")
		if err != nil {
			return false, err.Error()
		}
		last := time.Time{}
		for _, e := range events {
			if e.ObjectRef.Namespace == ns && e.Received.After(last) {
				last = e.Received.Time
			}
		}
		return time.Since(last) > 500*time.Millisecond, fmt.Sprintf("its last request in the namespace %v ago", time.Since(last))
	})
	mounts := func(ctx context.Context) (bool, string) {
		d, err := adapter(ctx, env.Kube.AppsV1().Deployments(ns), "bundled")
		if err != nil {
			return false, err.Error()
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for _, p := range v.Projected.Sources {
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
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "bundle", Namespace: ns, Labels: map[string]string{"networking.knative.dev/trust-bundle": "true"}},
		Data:       map[string]string{"ca.crt": ""},
	}
	start := time.Now()
	if _, err := env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the adapter mounts the trust bundle", mounts)
	t.Logf("the trust bundle reached the adapter's Deployment %v after it was made", time.Since(start).Round(time.Millisecond))
	if err := env.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, "bundle", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the adapter no longer mounts the trust bundle", func(ctx context.Context) (bool, string) {
		ok, why := mounts(ctx)
		return !ok, why
	})
}

const reconcilerUser = "system:serviceaccount:" + operatorNamespace + ":" + apiserversource.AgentName

// The reconciler runs with exactly config/'s roles: it was refused nothing,
// and used every rule it is granted (the tests above do all it does; this
// one runs last).
func TestZLeastPrivilege(t *testing.T) {
	env.CheckLeastPrivilege(t, "examples/apiserversource/config", apiserversource.AgentName, apiserversource.AgentName)
}
