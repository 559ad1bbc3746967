#!/usr/bin/env bash
# Copyright The Foo Operator Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Measures the operator on real Knative beside the classic sample-controller
# deployed on the same cluster as a pod (bench/knative): wake-ups from zero,
# in direct wiring and through the shared stream;
# the idle bill of the Foo operator alone in direct wiring, then of the Foo
# and the example Bar operators on the shared stream, with the resync pings'
# wake-ups, what one more operator costs and the break-even; and bursts of
# Foos, the classic's and ours in each wiring (and ours on up to three pods,
# BUCKETS set: autoscaled in each wiring, three kept in direct), with the
# node's CPU by component and our reconciler's requests from the audit log.
# Brings the one-node cluster up, installs the operator and builds the
# classic's image if needed, and leaves the cluster in stream wiring
# (_output/stream-bench). Writes
# bench/results/<time>-knative/{results.md,results.json}. Flags go to
# bench/knative (-wakeups 5 -n 1000 -idle 10m -burst 1000 -pairs
# direct,autoscaled,three-pods,stream,stream-autoscaled; -burst 0 skips the
# bursts; -idle 0 the idle bill and the pings). It takes roughly 2 × -idle
# plus 60 minutes.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/cluster/lib.sh"
cd "$ROOT"
hack/build-tools.sh sample-controller-raised >/dev/null
hack/cluster/up.sh
# A run before left the cluster in stream wiring: phase 1 starts in direct
# wiring, as the release installs it, so the stream and Foo's part in it go.
kubectl delete --ignore-not-found namespace operator-stream
kubectl delete --ignore-not-found clusterrole foo-operator-stream
hack/cluster/install.sh >/dev/null

# The classic controller's image: its binary on the cluster's base image.
tmp=$(mktemp -d)
mkdir "$tmp/root" && cp "$(tool sample-controller-raised)" "$tmp/root/sample-controller"
tar -C "$tmp/root" --owner=0 --group=0 -cf "$tmp/layer.tar" .
crane() { "$(tool crane)" "$@" 2>/dev/null; }
crane append -b "$REGISTRY/base:static" -f "$tmp/layer.tar" -t "$REGISTRY/sample-controller:build" >/dev/null
crane mutate "$REGISTRY/sample-controller:build" --entrypoint /sample-controller -t "$REGISTRY/sample-controller:v0.35.4-raised" >/dev/null
rm -rf "$tmp"
# Its CRD, with replicas allowed down to 0 (its own says 1 to 10): a
# one-node cluster cannot run a pod for each of thousands of Foos.
crd=$(cd hack/tools/sample-controller && go list -m -f '{{.Dir}}' k8s.io/sample-controller)/artifacts/examples/crd-status-subresource.yaml
sed 's/minimum: 1$/minimum: 0/' "$crd" | kubectl apply -f - >/dev/null
kubectl apply -f bench/knative/classic.yaml >/dev/null

out=bench/results/$(date -u +%Y-%m-%dT%H-%M)-knative
KUBECTL=$(tool kubectl) go run ./bench/knative -out "$out" "$@"
