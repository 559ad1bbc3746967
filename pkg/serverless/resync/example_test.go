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

package resync_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/frugal-operator/foo-operator/pkg/serverless/resync"
)

// An operator whose owners (here Secrets) each own a ConfigMap of their
// name, labelled "owner", that must hold the owner's "data" key: the resync
// lists both kinds, a page at a time, and names the owners whose reconcile
// would change something.
func ExamplePairs() {
	owner := func(name, data string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, StringData: map[string]string{"data": data}}
	}
	owned := func(name, data string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"owner": name}},
			Data: map[string]string{"data": data}}
	}
	kc := kubefake.NewSimpleClientset(
		owner("converged", "a"), owned("converged", "a"),
		owner("drifted", "b"), owned("drifted", "old"),
		owner("missing", "c"),
	)
	keys, err := resync.Pairs[*corev1.Secret, *corev1.ConfigMap]{
		Owners: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return kc.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, opts)
		},
		Owned: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return kc.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, opts)
		},
		OwnedSelector: "owner",
		OwnedName:     func(s *corev1.Secret) string { return s.Name },
		NeedsWork: func(_ context.Context, s *corev1.Secret, cm *corev1.ConfigMap) bool {
			return cm == nil || cm.Data["data"] != s.StringData["data"]
		},
	}.KeysNeedingWork(context.Background())
	fmt.Println(keys, err)
	// Output: [ns/drifted ns/missing] <nil>
}
