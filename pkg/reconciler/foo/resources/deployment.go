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

// Package resources builds the objects a Foo owns, as pure functions of the
// Foo, so that what the reconciler writes can be tested on its own.
package resources

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/kmeta"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
)

const (
	// FooLabelKey labels the objects a Foo owns with the Foo's name.
	FooLabelKey = "samplecontroller.knative.io/foo"
	// Image is the image every Foo runs.
	Image = "nginx:latest"
)

// Labels returns the labels that tie a Deployment and its pods to a Foo.
func Labels(foo *samplesv1alpha1.Foo) map[string]string {
	return map[string]string{
		"app":       "nginx",
		FooLabelKey: foo.Name,
	}
}

// MakeDeployment returns the Deployment a Foo asks for: the classic nginx
// pod template, the Foo's replicas (1 when it does not say) and a controller
// reference to the Foo, so that garbage collection removes it with the Foo.
//
// The pod template is complete: it also spells out every value the API
// server (Kubernetes 1.35) would default in it (k8s.io/kubernetes
// pkg/apis/core/v1 SetDefaults_PodSpec and SetDefaults_Container). The
// operator owns the whole template and compares it exactly with the one in
// the cluster; with a default left out, the server's copy would differ from
// this one forever and every reconcile would write. test/e2e/drift_test.go
// checks this against a real API server. A field added here that the server
// defaults (ports' protocol, probes' timings, a volume's defaultMode, ...)
// must be given its default value too.
func MakeDeployment(foo *samplesv1alpha1.Foo) *appsv1.Deployment {
	replicas := samplesv1alpha1.DefaultReplicas
	if foo.Spec.Replicas != nil {
		replicas = *foo.Spec.Replicas
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            foo.Spec.DeploymentName,
			Namespace:       foo.Namespace,
			Labels:          Labels(foo),
			OwnerReferences: []metav1.OwnerReference{*kmeta.NewControllerRef(foo)},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.Int32(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: Labels(foo)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels(foo)},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "nginx",
						Image: Image,
						// The server's defaults; Always is its pull policy for a :latest image.
						ImagePullPolicy:          corev1.PullAlways,
						TerminationMessagePath:   corev1.TerminationMessagePathDefault,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					}},
					// The server's defaults.
					RestartPolicy:                 corev1.RestartPolicyAlways,
					TerminationGracePeriodSeconds: ptr.Int64(corev1.DefaultTerminationGracePeriodSeconds),
					DNSPolicy:                     corev1.DNSClusterFirst,
					SecurityContext:               &corev1.PodSecurityContext{},
					SchedulerName:                 corev1.DefaultSchedulerName,
				},
			},
		},
	}
}
