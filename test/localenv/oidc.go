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

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The sink's audience with Knative Eventing's authentication-oidc on (the
// sources' spec.sink.audience), and the OIDC identities eventing gives the
// sources of config/ (auth.GetOIDCServiceAccountNameForResource: name
// -oidc- group - kind).
const (
	OIDCAudience   = "foo-reconciler.foo-operator"
	FoosIdentity   = "foos-oidc-sources.knative.dev-apiserversource"
	ResyncIdentity = "foo-resync-oidc-sources.knative.dev-pingsource"
)

// Subject is the OIDC subject of the operator namespace's service account sa.
func Subject(sa string) string { return "system:serviceaccount:" + Namespace + ":" + sa }

// OIDCIdentities make what Knative Eventing's controller makes for a source
// when authentication-oidc is on: the source's OIDC identity (a service
// account of the operator's namespace), and the adapter's right (foo-sources,
// the adapters' service account) to ask for its tokens, with K_AUDIENCE and
// K_OIDC_SERVICE_ACCOUNT set. What exists already is kept.
func OIDCIdentities(ctx context.Context, kube kubernetes.Interface, identities ...string) error {
	create := func(err error) error {
		if apierrs.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	for _, id := range identities {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: Namespace}}
		if _, err := kube.CoreV1().ServiceAccounts(Namespace).Create(ctx, sa, metav1.CreateOptions{}); create(err) != nil {
			return fmt.Errorf("creating service account %s: %w", id, err)
		}
		name := id + "-create-oidc-token"
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{id}, Verbs: []string{"create"}}}}
		if _, err := kube.RbacV1().Roles(Namespace).Create(ctx, role, metav1.CreateOptions{}); create(err) != nil {
			return fmt.Errorf("creating role %s: %w", name, err)
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "foo-sources", Namespace: Namespace}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name}}
		if _, err := kube.RbacV1().RoleBindings(Namespace).Create(ctx, rb, metav1.CreateOptions{}); create(err) != nil {
			return fmt.Errorf("creating role binding %s: %w", name, err)
		}
	}
	return nil
}

// AdapterOIDCEnv is the env that has an adapter send identity's tokens.
func AdapterOIDCEnv(identity string) []string {
	return []string{"K_AUDIENCE=" + OIDCAudience, "K_OIDC_SERVICE_ACCOUNT=" + identity}
}

// Token returns a token of the operator namespace's service account sa for
// audience aud, asked for with kube's credentials.
func Token(ctx context.Context, kube kubernetes.Interface, sa, aud string) (string, error) {
	tr, err := kube.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{aud}}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}
