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

// Package controlplane exists so that integration tests and local runs can
// exercise the operator against a real Kubernetes control plane (etcd,
// kube-apiserver with RBAC, and optionally kube-controller-manager for garbage
// collection and namespace deletion) without a cluster, a container runtime or
// anything listening beyond 127.0.0.1.
//
// The binaries come from hack/build-tools.sh, which this package runs with
// --path to find them; build them first with
//
//	hack/build-tools.sh
//
// Every process is started by this package, is stopped by its PID, and is
// sent SIGKILL by the kernel if the process that started it dies, so a
// crashed test leaves nothing behind.
//
// Nothing runs pods: a Deployment stays at zero available replicas unless the
// test writes its status subresource.
package controlplane
