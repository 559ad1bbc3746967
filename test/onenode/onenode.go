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

// Package onenode is the layout of the one-node Knative cluster that
// hack/cluster/up.sh makes (hack/cluster/lib.sh): its node's address and
// where its files are. The Knative suite and the Knative harness read them
// here.
package onenode

import "path/filepath"

// NodeIP is the node's address on the cluster's bridge (lib.sh's NODE_IP):
// where the cluster's pods reach a server on the host.
const NodeIP = "10.244.0.1"

// dir is the cluster's folder under the repository's root (lib.sh's
// CLUSTER_DIR, by default).
var dir = filepath.Join("_output", "cluster")

// Kubeconfig is the cluster admin's kubeconfig, under the repository's
// root ("": the working directory).
func Kubeconfig(root string) string { return filepath.Join(root, dir, "kubeconfig") }

// AuditLog is the API server's audit log (what hack/cluster/conf's policy
// records), under the repository's root ("": the working directory).
func AuditLog(root string) string { return filepath.Join(root, dir, "logs", "audit.log") }
