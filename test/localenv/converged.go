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
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
	"github.com/frugal-operator/foo-operator/pkg/client/clientset/versioned"
	"github.com/frugal-operator/foo-operator/test/controlplane"
)

// Converged reports, on any cluster, whether ns holds n Foos, each with
// exactly its Deployment, controlled by it, with its replicas, and a status
// of its generation, and no Deployment without its Foo; the message says
// how far it is.
func Converged(ctx context.Context, kube kubernetes.Interface, foos versioned.Interface, ns string, n int) (bool, string) {
	fs, err := foos.SamplecontrollerV1alpha1().Foos(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	deps, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err.Error()
	}
	if len(fs.Items) != n {
		return false, fmt.Sprintf("%d Foos, want %d", len(fs.Items), n)
	}
	byName := map[string]*samplesv1alpha1.Foo{}
	for i := range fs.Items {
		byName[fs.Items[i].Spec.DeploymentName] = &fs.Items[i]
	}
	done := 0
	waiting := map[string]string{} // by Deployment name: why its Foo has not converged
	for name, f := range byName {
		waiting[name] = fmt.Sprintf("%s: no Deployment; status of generation %d of %d", f.Name, f.Status.ObservedGeneration, f.Generation)
	}
	for _, d := range deps.Items {
		f, ok := byName[d.Name]
		if !ok || !metav1.IsControlledBy(&d, f) {
			return false, fmt.Sprintf("deployment %s has no Foo controlling it: %v", d.Name, d.OwnerReferences)
		}
		if *d.Spec.Replicas == *f.Spec.Replicas && f.Status.ObservedGeneration == f.Generation {
			done++
			delete(waiting, d.Name)
			continue
		}
		waiting[d.Name] = fmt.Sprintf("%s: Deployment at %d replicas of %d; status of generation %d of %d",
			f.Name, *d.Spec.Replicas, *f.Spec.Replicas, f.Status.ObservedGeneration, f.Generation)
	}
	if len(deps.Items) > n {
		return false, fmt.Sprintf("%d deployments for %d Foos", len(deps.Items), n)
	}
	return done == n, fmt.Sprintf("%d of %d Foos converged (%d deployments)%s", done, n, len(deps.Items), someOf(waiting))
}

// someOf names a few of the Foos that have not converged and why, for a
// test that waited for them in vain.
func someOf(waiting map[string]string) string {
	const most = 5
	whys := slices.Sorted(maps.Values(waiting))
	if len(whys) > most {
		whys = append(whys[:most], fmt.Sprintf("and %d more", len(whys)-most))
	}
	if len(whys) == 0 {
		return ""
	}
	return "; waiting: " + strings.Join(whys, ", ")
}

// SetReplicas sets the replicas of Foo ns/name to each of replicas in
// turn, one update each, as a user changing it several times in a row
// would; a conflict (a status update in between) is retried on a fresh read.
func SetReplicas(ctx context.Context, foos versioned.Interface, ns, name string, replicas ...int32) error {
	for _, r := range replicas {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			f, err := foos.SamplecontrollerV1alpha1().Foos(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			f.Spec.Replicas = ptr.Int32(r)
			_, err = foos.SamplecontrollerV1alpha1().Foos(ns).Update(ctx, f, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("setting %s/%s's replicas to %d: %w", ns, name, r, err)
		}
	}
	return nil
}

// Writes counts, of the audit events given, the writes in namespace ns
// that tell whether each Deployment was made once: Deployments created (in
// all, and by the sender's IP), AlreadyExists answers and update conflicts.
type Writes struct {
	DeploymentCreates, AlreadyExists, Conflicts int
	CreatesBy                                   map[string]int
}

// WritesIn counts the Writes of events in ns.
func WritesIn(events []controlplane.AuditEvent, ns string) Writes {
	w := Writes{CreatesBy: map[string]int{}}
	for _, e := range events {
		if e.ObjectRef.Namespace != ns || e.ResponseStatus == nil {
			continue
		}
		switch code := e.ResponseStatus.Code; {
		case e.Verb == "create" && e.ObjectRef.Resource == "deployments" && code == 201:
			w.DeploymentCreates++
			if len(e.SourceIPs) > 0 {
				w.CreatesBy[e.SourceIPs[0]]++
			}
		case e.Verb == "create" && code == 409:
			w.AlreadyExists++
		case (e.Verb == "update" || e.Verb == "patch") && code == 409:
			w.Conflicts++
		}
	}
	return w
}

// ListsOfEvery returns, for each LIST of every namespace's objects of
// resource among events (its first page: a resync's, where a lookup is in
// one namespace), the sender's IP.
func ListsOfEvery(events []controlplane.AuditEvent, resource string) []string {
	var senders []string
	for _, e := range events {
		if e.Verb == "list" && e.ObjectRef.Resource == resource && e.ObjectRef.Namespace == "" &&
			!strings.Contains(e.RequestURI, "continue=") && len(e.SourceIPs) > 0 {
			senders = append(senders, e.SourceIPs[0])
		}
	}
	return senders
}
