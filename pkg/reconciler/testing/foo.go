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

package testing

import (
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"knative.dev/pkg/ptr"

	samplesv1alpha1 "github.com/frugal-operator/foo-operator/pkg/apis/samplecontroller/v1alpha1"
)

// FooOption changes a Foo that NewFoo builds.
type FooOption func(*samplesv1alpha1.Foo)

// NewFoo returns a Foo named name in namespace ns, with a UID and a
// generation, changed by the options in order.
func NewFoo(name, ns string, opts ...FooOption) *samplesv1alpha1.Foo {
	f := &samplesv1alpha1.Foo{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  ns,
			UID:        types.UID(ns + "/" + name + "-uid"),
			Generation: 1,
		},
	}
	for _, opt := range opts {
		opt(f)
	}
	return f
}

// WithDeploymentName sets spec.deploymentName.
func WithDeploymentName(name string) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.Spec.DeploymentName = name }
}

// WithReplicas sets spec.replicas.
func WithReplicas(n int32) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.Spec.Replicas = ptr.Int32(n) }
}

// WithGeneration sets metadata.generation.
func WithGeneration(g int64) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.Generation = g }
}

// WithResourceVersion sets metadata.resourceVersion.
func WithResourceVersion(rv string) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.ResourceVersion = rv }
}

// WithFooDeletionTimestamp marks the Foo as being deleted.
func WithFooDeletionTimestamp(f *samplesv1alpha1.Foo) {
	t := metav1.NewTime(time.Unix(1e9, 0))
	f.DeletionTimestamp = &t
}

// WithInitFooConditions sets every condition to Unknown.
func WithInitFooConditions(f *samplesv1alpha1.Foo) {
	f.Status.InitializeConditions()
}

// WithObservedGeneration sets status.observedGeneration to the Foo's generation.
func WithObservedGeneration(f *samplesv1alpha1.Foo) {
	f.Status.ObservedGeneration = f.Generation
}

// WithStatusOf propagates a Deployment's status into the Foo's.
func WithStatusOf(d *appsv1.Deployment) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.Status.PropagateDeploymentStatus(d) }
}

// WithDeploymentNotOwned marks the Foo's Deployment as someone else's.
func WithDeploymentNotOwned(f *samplesv1alpha1.Foo) {
	f.Status.MarkDeploymentNotOwned(f.Spec.DeploymentName)
}

// WithSpecInvalid marks the Foo's spec as invalid with msg.
func WithSpecInvalid(msg string) FooOption {
	return func(f *samplesv1alpha1.Foo) { f.Status.MarkSpecInvalid(msg) }
}

// DeploymentOption changes a Deployment.
type DeploymentOption func(*appsv1.Deployment)

// WithDeploymentReplicas sets spec.replicas.
func WithDeploymentReplicas(n int32) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.Int32(n) }
}

// WithDeploymentAvailable writes the status a rolled-out Deployment with
// every replica available reports.
func WithDeploymentAvailable(d *appsv1.Deployment) {
	n := *d.Spec.Replicas
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Replicas:           n,
		UpdatedReplicas:    n,
		ReadyReplicas:      n,
		AvailableReplicas:  n,
	}
}

// WithDeploymentRollingOut writes the status of a Deployment that has
// observed its spec and has available of its replicas available.
func WithDeploymentRollingOut(available int32) DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           *d.Spec.Replicas,
			UpdatedReplicas:    *d.Spec.Replicas,
			AvailableReplicas:  available,
		}
	}
}

// WithDeploymentFailed writes the status of a Deployment that gave up progressing.
func WithDeploymentFailed(d *appsv1.Deployment) {
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: d.Generation,
		Conditions: []appsv1.DeploymentCondition{{
			Type:    appsv1.DeploymentProgressing,
			Status:  corev1.ConditionFalse,
			Reason:  "ProgressDeadlineExceeded",
			Message: "ReplicaSet \"x\" has timed out progressing.",
		}},
	}
}

// WithDeploymentLabels replaces the Deployment's labels.
func WithDeploymentLabels(l map[string]string) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Labels = l }
}

// WithoutOwner removes the Deployment's owner references.
func WithoutOwner(d *appsv1.Deployment) {
	d.OwnerReferences = nil
}

// WithImage sets the image of the Deployment's first container.
func WithImage(image string) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image }
}

// WithContainer appends c to the Deployment's pod template: a sidecar.
func WithContainer(c corev1.Container) DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, c)
	}
}

// WithoutContainers removes every container from the Deployment's pod template.
func WithoutContainers(d *appsv1.Deployment) {
	d.Spec.Template.Spec.Containers = nil
}

// WithEnv appends an environment variable to the first container.
func WithEnv(name, value string) DeploymentOption {
	return func(d *appsv1.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	}
}

// WithCommand sets the first container's command.
func WithCommand(cmd ...string) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Command = cmd }
}

// WithArgs sets the first container's args.
func WithArgs(args ...string) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Args = args }
}

// WithEmptyDirVolume appends an emptyDir volume to the pod template.
func WithEmptyDirVolume(name string) DeploymentOption {
	return func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Volumes = append(d.Spec.Template.Spec.Volumes, corev1.Volume{
			Name:         name,
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
		})
	}
}

// WithPodRunAsUser sets runAsUser in the pod template's security context.
func WithPodRunAsUser(uid int64) DeploymentOption {
	return func(d *appsv1.Deployment) {
		if d.Spec.Template.Spec.SecurityContext == nil {
			d.Spec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{}
		}
		d.Spec.Template.Spec.SecurityContext.RunAsUser = ptr.Int64(uid)
	}
}

// WithContainerSecurityContext sets the first container's security context.
func WithContainerSecurityContext(sc *corev1.SecurityContext) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].SecurityContext = sc }
}

// WithTemplateAnnotation adds an annotation to the pod template.
func WithTemplateAnnotation(k, v string) DeploymentOption {
	return func(d *appsv1.Deployment) {
		if d.Spec.Template.Annotations == nil {
			d.Spec.Template.Annotations = map[string]string{}
		}
		d.Spec.Template.Annotations[k] = v
	}
}

// WithTemplateLabel adds a label to the pod template.
func WithTemplateLabel(k, v string) DeploymentOption {
	return func(d *appsv1.Deployment) {
		l := make(map[string]string, len(d.Spec.Template.Labels)+1)
		for lk, lv := range d.Spec.Template.Labels {
			l[lk] = lv
		}
		l[k] = v
		d.Spec.Template.Labels = l
	}
}

// WithTerminationGracePeriod sets the pod template's terminationGracePeriodSeconds.
func WithTerminationGracePeriod(s int64) DeploymentOption {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.Int64(s) }
}

// AsServerReturns makes d what a Kubernetes 1.35 API server returns for it
// once created: every field the server defaults filled in where d leaves it
// empty (k8s.io/kubernetes pkg/apis/core/v1 and pkg/apis/apps/v1 defaults.go;
// test/e2e/drift_test.go checks the result against a real API server), plus
// the metadata the server sets and the revision the deployment controller
// annotates. It is written apart from resources.MakeDeployment on purpose:
// a Deployment built by it and then read back must not count as drifted.
func AsServerReturns(d *appsv1.Deployment) {
	d.UID = "deployment-uid"
	d.ResourceVersion = "1"
	d.Generation = 1
	d.CreationTimestamp = metav1.NewTime(time.Unix(1e9, 0))
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations["deployment.kubernetes.io/revision"] = "1"

	// apps/v1 SetDefaults_Deployment.
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.Int32(1)
	}
	if d.Spec.Strategy.Type == "" {
		d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && d.Spec.Strategy.RollingUpdate == nil {
		quarter := intstr.FromString("25%")
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: &quarter, MaxSurge: &quarter}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptr.Int32(10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptr.Int32(600)
	}

	// core/v1 SetDefaults_PodSpec.
	ps := &d.Spec.Template.Spec
	if ps.RestartPolicy == "" {
		ps.RestartPolicy = corev1.RestartPolicyAlways
	}
	if ps.DNSPolicy == "" {
		ps.DNSPolicy = corev1.DNSClusterFirst
	}
	if ps.SecurityContext == nil {
		ps.SecurityContext = &corev1.PodSecurityContext{}
	}
	if ps.TerminationGracePeriodSeconds == nil {
		ps.TerminationGracePeriodSeconds = ptr.Int64(30)
	}
	if ps.SchedulerName == "" {
		ps.SchedulerName = "default-scheduler"
	}
	// core/v1 SetDefaults_Container and the ContainerPort protocol default.
	for i := range ps.Containers {
		c := &ps.Containers[i]
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = defaultPullPolicy(c.Image)
		}
		if c.TerminationMessagePath == "" {
			c.TerminationMessagePath = "/dev/termination-log"
		}
		if c.TerminationMessagePolicy == "" {
			c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		}
		for j := range c.Ports {
			if c.Ports[j].Protocol == "" {
				c.Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

// defaultPullPolicy is the API server's default imagePullPolicy for image:
// Always when its tag is latest or it has neither tag nor digest,
// IfNotPresent otherwise.
func defaultPullPolicy(image string) corev1.PullPolicy {
	name, digest, _ := strings.Cut(image, "@")
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		tag = name[i+1:]
	}
	if tag == "latest" || (tag == "" && digest == "") {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// Deployment applies options to a copy of d.
func Deployment(d *appsv1.Deployment, opts ...DeploymentOption) *appsv1.Deployment {
	d = d.DeepCopy()
	for _, opt := range opts {
		opt(d)
	}
	return d
}
