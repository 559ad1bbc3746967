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

package foo

import (
	"context"
	"fmt"

	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
)

// claimants finds the Foos that wait for a Deployment's name. It only reads.
type claimants struct {
	foos versioned.Interface
}

// deploymentNameField is the Foo field that the CRD makes selectable
// (selectableFields in config/300-foo.yaml).
const deploymentNameField = "spec.deploymentName"

// of returns the Foos of ns that ask for the Deployment name, now
// that the Deployment that holder (a Foo) controlled was deleted: those the
// name was refused to (DeploymentNotOwned) may take it now. If holder still
// asks for the name, it recreates the Deployment and nobody else may take
// it: then there are none. One LIST, by a field selector (of every Foo of
// ns if the CRD in the cluster predates that selectable field).
func (c claimants) of(ctx context.Context, ns, name, holder string) ([]types.NamespacedName, error) {
	foos := c.foos.SamplecontrollerV1alpha1().Foos(ns)
	list, err := foos.List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector(deploymentNameField, name).String(),
	})
	if apierrs.IsBadRequest(err) {
		list, err = foos.List(ctx, metav1.ListOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("failed to list foos asking for deployment %s/%s: %w", ns, name, err)
	}
	var keys []types.NamespacedName
	for i := range list.Items {
		f := &list.Items[i]
		if f.Spec.DeploymentName != name || f.DeletionTimestamp != nil {
			continue
		}
		if f.Name == holder {
			return nil, nil
		}
		keys = append(keys, types.NamespacedName{Namespace: f.Namespace, Name: f.Name})
	}
	return keys, nil
}
