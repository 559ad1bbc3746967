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
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/frugal-operator/foo-operator/pkg/reconciler/foo"
	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// 8. Least privilege on the real cluster: the reconciler's pod and the
// adapters' pods run as config/'s ServiceAccounts, and what they asked of the
// API server so far (the audit log; hack/cluster/conf/audit-policy.yaml
// records the foo-operator namespace's ServiceAccounts) was granted by
// config/'s roles, refused nothing, and needed nothing more.
func TestLeastPrivilege(t *testing.T) {
	ctx := context.Background()
	pods, err := kube.CoreV1().Pods(system).List(ctx, metav1.ListOptions{LabelSelector: adapterSelector})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != adapters {
		t.Errorf("%d adapter pods, want %d (one per ApiServerSource)", len(pods.Items), adapters)
	}
	for _, p := range pods.Items {
		if p.Spec.ServiceAccountName != "foo-sources" {
			t.Errorf("adapter pod %s runs as %q, want foo-sources", p.Name, p.Spec.ServiceAccountName)
		}
	}
	// The reconciler may be at zero pods: its Deployment says what they run as.
	revisions, err := kube.AppsV1().Deployments(system).List(ctx, metav1.ListOptions{LabelSelector: "serving.knative.dev/service=" + service})
	if err != nil || len(revisions.Items) == 0 {
		t.Fatalf("the reconciler's Deployments: %d, %v", len(revisions.Items), err)
	}
	for _, d := range revisions.Items {
		if sa := d.Spec.Template.Spec.ServiceAccountName; sa != "foo-reconciler" {
			t.Errorf("the reconciler's pods (%s) run as %q, want foo-reconciler", d.Name, sa)
		}
	}

	config := func(file string) string { return filepath.Join(root, "config", file) }
	for _, who := range []struct {
		role, agent string
		files       []string
	}{
		{role: "foo-reconciler", agent: foo.AgentName, files: []string{config("200-clusterroles.yaml"), config("200-roles.yaml")}},
		{role: "foo-sources", agent: "", files: []string{config("200-clusterroles.yaml")}},
	} {
		u, err := controlplane.PrivilegeUseIn(auditLog, auditFrom, who.files, who.role, "system:serviceaccount:"+system+":"+who.role, who.agent)
		if err != nil {
			t.Fatal(err)
		}
		if len(u.Refused) > 0 || len(u.Ungranted) > 0 {
			t.Errorf("%s: %v", who.role, u)
		}
		t.Logf("%s: granted and not used yet: %v", who.role, u.Unused)
	}
}
