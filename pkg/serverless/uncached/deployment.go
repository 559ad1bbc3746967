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

package uncached

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appsv1listers "k8s.io/client-go/listers/apps/v1"
)

// DeploymentLister reads Deployments from the API server on every call.
type DeploymentLister struct {
	ctx    context.Context
	client kubernetes.Interface
	ns     string
}

var (
	_ appsv1listers.DeploymentLister          = (*DeploymentLister)(nil)
	_ appsv1listers.DeploymentNamespaceLister = (*DeploymentLister)(nil)
)

// NewDeploymentLister returns a DeploymentLister whose requests live as long as ctx.
func NewDeploymentLister(ctx context.Context, client kubernetes.Interface) *DeploymentLister {
	return &DeploymentLister{ctx: ctx, client: client}
}

// List lists the Deployments in the lister's namespace (all namespaces at the
// top level) that match the selector.
func (l *DeploymentLister) List(selector labels.Selector) ([]*appsv1.Deployment, error) {
	list, err := l.client.AppsV1().Deployments(l.ns).List(l.ctx, listOptions(selector))
	if err != nil {
		return nil, err
	}
	out := make([]*appsv1.Deployment, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// Deployments returns a lister for one namespace.
func (l *DeploymentLister) Deployments(namespace string) appsv1listers.DeploymentNamespaceLister {
	return &DeploymentLister{ctx: l.ctx, client: l.client, ns: namespace}
}

// Get reads one Deployment of the lister's namespace.
func (l *DeploymentLister) Get(name string) (*appsv1.Deployment, error) {
	return l.client.AppsV1().Deployments(l.ns).Get(l.ctx, name, metav1.GetOptions{})
}
