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
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo/resources"
	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// 10. The reconciler runs with exactly config/'s RBAC: what it is not
// granted is refused, and every rule it is granted is used.
func TestLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", env.ReconcilerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	foos := versioned.NewForConfigOrDie(cfg)

	// Work that uses every rule: a Foo made and scaled, one whose
	// Deployment is someone else's (a Warning event, repeated by two resyncs
	// so that the recorder patches it), and the resyncs' lists.
	createFoo(t, newFoo(ns, "web", "web", 1))
	deploymentReplicas(t, ns, "web", 1)
	patch(t, ns, "web", `{"spec":{"replicas":2}}`)
	deploymentReplicas(t, ns, "web", 2)
	theirs := resources.MakeDeployment(newFoo(ns, "x", "taken", 1))
	theirs.OwnerReferences = nil
	if _, err := env.Kube.AppsV1().Deployments(ns).Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createFoo(t, newFoo(ns, "loser", "taken", 1))
	for range 2 {
		if _, err := env.Resync(ctx); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("refused", func(t *testing.T) {
		d := theirs.DeepCopy()
		for name, do := range map[string]func() error{
			"list secrets":        func() error { _, err := kube.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); return err },
			"get a secret":        func() error { _, err := kube.CoreV1().Secrets(ns).Get(ctx, "any", metav1.GetOptions{}); return err },
			"list replicasets":    func() error { _, err := kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{}); return err },
			"watch deployments":   func() error { _, err := kube.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{}); return err },
			"delete a deployment": func() error { return kube.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}) },
			"patch a deployment": func() error {
				_, err := kube.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
				return err
			},
			"update a deployment's status": func() error {
				_, err := kube.AppsV1().Deployments(ns).UpdateStatus(ctx, d, metav1.UpdateOptions{})
				return err
			},
			"create a Foo": func() error {
				_, err := foos.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, newFoo(ns, "mine", "mine", 1), metav1.CreateOptions{})
				return err
			},
			"update a Foo's spec": func() error {
				f, err := getFoo(ctx, ns, "web")
				if err != nil {
					return err
				}
				_, err = foos.SamplecontrollerV1alpha1().Foos(ns).Update(ctx, f, metav1.UpdateOptions{})
				return err
			},
			"delete a Foo": func() error {
				return foos.SamplecontrollerV1alpha1().Foos(ns).Delete(ctx, "web", metav1.DeleteOptions{})
			},
			"watch Foos": func() error {
				_, err := foos.SamplecontrollerV1alpha1().Foos(ns).Watch(ctx, metav1.ListOptions{})
				return err
			},
			"list pods": func() error { _, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); return err },
		} {
			if err := do(); !apierrs.IsForbidden(err) {
				t.Errorf("%s: %v, want Forbidden", name, err)
			}
		}
		// And the identity is the reconciler's: what it is granted works.
		if _, err := foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
			t.Errorf("get a Foo: %v", err)
		}
	})

	t.Run("every rule used", func(t *testing.T) {
		root, err := controlplane.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		files := []string{filepath.Join(root, "config", "200-clusterroles.yaml"), filepath.Join(root, "config", "200-roles.yaml")}
		eventually(t, "the reconciler used every granted rule, and nothing else", func(context.Context) (bool, string) {
			u, err := env.CP.PrivilegeUse(files, foo.AgentName, reconcilerUser, foo.AgentName)
			if err != nil {
				return false, err.Error()
			}
			return u.Least(), u.String()
		})
	})
}

// reconcilerUser is the reconciler's identity: config/'s ServiceAccount.
const reconcilerUser = "system:serviceaccount:foo-operator:foo-reconciler"

// reconcilerAudit returns the audited requests of the reconciler binary
// (its user agent, its ServiceAccount) written at or after byte offset from
// of the audit log, and the offset where the log ends.
func reconcilerAudit(t *testing.T, from int64) ([]controlplane.AuditEvent, int64) {
	t.Helper()
	events, end, err := env.CP.AuditEvents(from, reconcilerUser, foo.AgentName)
	if err != nil {
		t.Fatal(err)
	}
	return events, end
}

// Users of the built-in roles may use Foos: config/'s aggregated ClusterRoles
// put the Foo rules into edit (and admin), and the read rules into view.
func TestTheBuiltInRolesCoverFoos(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	as := func(user, role string) versioned.Interface {
		t.Helper()
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		}
		if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cfg := rest.CopyConfig(env.CP.RESTConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		return versioned.NewForConfigOrDie(cfg)
	}
	editor, viewer := as("an-editor", "edit"), as("a-viewer", "view")

	// kube-controller-manager aggregates the rules: poll until it has.
	eventually(t, "a user with edit creates a Foo", func(ctx context.Context) (bool, string) {
		_, err := editor.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, newFoo(ns, "edited", "edited", 1), metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	eventually(t, "a user with view reads it", func(ctx context.Context) (bool, string) {
		_, err := viewer.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, "edited", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if _, err := viewer.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("view: list Foos: %v", err)
	}
	if _, err := viewer.SamplecontrollerV1alpha1().Foos(ns).Create(ctx, newFoo(ns, "viewed", "viewed", 1), metav1.CreateOptions{}); !apierrs.IsForbidden(err) {
		t.Errorf("view: create a Foo: %v, want Forbidden", err)
	}
	if err := viewer.SamplecontrollerV1alpha1().Foos(ns).Delete(ctx, "edited", metav1.DeleteOptions{}); !apierrs.IsForbidden(err) {
		t.Errorf("view: delete a Foo: %v, want Forbidden", err)
	}
	if err := editor.SamplecontrollerV1alpha1().Foos(ns).Delete(ctx, "edited", metav1.DeleteOptions{}); err != nil {
		t.Errorf("edit: delete a Foo: %v", err)
	}
}
