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

package controlplane

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigForServiceAccount asks the TokenRequest API for a token of the
// ServiceAccount namespace/name, which must exist, and writes a kubeconfig
// that uses it to Dir. Clients made from either result act as the
// ServiceAccount, so RBAC applies to them as it would in a cluster. A zero
// ttl means the API server's default of one hour; the API server refuses a
// ttl under ten minutes.
func (c *ControlPlane) KubeconfigForServiceAccount(ctx context.Context, namespace, name string, ttl time.Duration) (string, *rest.Config, error) {
	client, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		return "", nil, fmt.Errorf("failed to create the admin client: %w", err)
	}
	req := &authenticationv1.TokenRequest{}
	if ttl != 0 {
		seconds := int64(ttl / time.Second)
		req.Spec.ExpirationSeconds = &seconds
	}
	tok, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("failed to request a token for service account %s/%s: %w", namespace, name, err)
	}
	path := filepath.Join(c.Dir, "serviceaccount-"+namespace+"-"+name+".kubeconfig")
	user := "system:serviceaccount:" + namespace + ":" + name
	if err := writeKubeconfig(path, c.URL, c.CAData, user, tok.Status.Token, namespace); err != nil {
		return "", nil, err
	}
	cfg := &rest.Config{
		Host:            c.URL,
		BearerToken:     tok.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CAData},
	}
	return path, cfg, nil
}

// writeKubeconfig writes a self-contained kubeconfig with one context whose
// user authenticates with a bearer token.
func writeKubeconfig(path, server string, caData []byte, user, token, namespace string) error {
	const cluster = "controlplane"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[user] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user, Namespace: namespace}
	cfg.CurrentContext = user
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("failed to write kubeconfig %s: %w", path, err)
	}
	return nil
}
