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

package resources

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
)

func TestMakeDeployment(t *testing.T) {
	foo := func(replicas *int32) *samplesv1alpha1.Foo {
		return &samplesv1alpha1.Foo{
			ObjectMeta: metav1.ObjectMeta{Name: "my-foo", Namespace: "team", UID: "1234"},
			Spec:       samplesv1alpha1.FooSpec{DeploymentName: "web", Replicas: replicas},
		}
	}
	want := func(replicas int32) *appsv1.Deployment {
		labels := map[string]string{"app": "nginx", "samplecontroller.knative.io/foo": "my-foo"}
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{
				Name:      "web",
				Namespace: "team",
				Labels:    labels,
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion:         "samplecontroller.knative.io/v1alpha1",
					Kind:               "Foo",
					Name:               "my-foo",
					UID:                "1234",
					Controller:         ptr.Bool(true),
					BlockOwnerDeletion: ptr.Bool(true),
				}},
			},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.Int32(replicas),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						Containers: []corev1.Container{{
							Name:                     "nginx",
							Image:                    "nginx:latest",
							ImagePullPolicy:          corev1.PullAlways,
							TerminationMessagePath:   "/dev/termination-log",
							TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						}},
						RestartPolicy:                 corev1.RestartPolicyAlways,
						TerminationGracePeriodSeconds: ptr.Int64(30),
						DNSPolicy:                     corev1.DNSClusterFirst,
						SecurityContext:               &corev1.PodSecurityContext{},
						SchedulerName:                 "default-scheduler",
					},
				},
			},
		}
	}
	tests := []struct {
		name string
		foo  *samplesv1alpha1.Foo
		want *appsv1.Deployment
	}{
		{"replicas set", foo(ptr.Int32(3)), want(3)},
		{"zero replicas", foo(ptr.Int32(0)), want(0)},
		{"replicas left out", foo(nil), want(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, MakeDeployment(tc.foo)); diff != "" {
				t.Error("MakeDeployment (-want, +got):", diff)
			}
		})
	}
}
