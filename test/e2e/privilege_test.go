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
	"maps"
	"path/filepath"
	"sort"
	"testing"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
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
		granted := grantedRules(t)
		eventually(t, "the reconciler used every granted rule", func(context.Context) (bool, string) {
			used, refused := reconcilerRequests(t)
			if len(refused) > 0 {
				return false, fmt.Sprintf("the reconciler was refused: %v", refused)
			}
			var unused []string
			for r := range granted {
				if !used[r] {
					unused = append(unused, r)
				}
			}
			for r := range used {
				if !granted[r] {
					return false, fmt.Sprintf("the reconciler did %s without a rule: the audit filter is wrong", r)
				}
			}
			sort.Strings(unused)
			return len(unused) == 0, fmt.Sprintf("unused: %v", unused)
		})
	})
}

// grantedRules returns config/'s foo-reconciler rules (its ClusterRole's and its Role's) as "verb group/resource".
func grantedRules(t *testing.T) map[string]bool {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]bool{}
	for _, f := range []string{"200-clusterroles.yaml", "200-roles.yaml"} {
		granted, err := controlplane.GrantedRules(filepath.Join(root, "config", f), foo.AgentName)
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(rules, granted)
	}
	return rules
}

// reconcilerRequests reads the audit log for the requests the reconciler
// binary made (its user agent, its ServiceAccount), as "verb group/resource",
// and those RBAC refused.
func reconcilerRequests(t *testing.T) (used map[string]bool, refused []string) {
	t.Helper()
	used = map[string]bool{}
	events, _ := reconcilerAudit(t, 0)
	for _, e := range events {
		if e.Forbidden() {
			refused = append(refused, e.Request())
			continue
		}
		used[e.Request()] = true
	}
	return used, refused
}

// reconcilerAudit returns the audited requests of the reconciler binary
// (its user agent, its ServiceAccount) written at or after byte offset from
// of the audit log, and the offset where the log ends.
func reconcilerAudit(t *testing.T, from int64) ([]controlplane.AuditEvent, int64) {
	t.Helper()
	events, end, err := env.CP.AuditEvents(from, "system:serviceaccount:foo-operator:foo-reconciler", foo.AgentName)
	if err != nil {
		t.Fatal(err)
	}
	return events, end
}
