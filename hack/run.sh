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

# Runs the operator end to end on this machine: builds what is missing, starts
# a loopback control plane, the reconciler and two real ApiServerSource
# adapters, applies config/samples/example-foo.yaml and prints the result.
# Ctrl-C stops everything. --once runs, prints and exits. --knative does it on
# real Knative instead, on a one-node cluster that it leaves running.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
if [[ ${1:-} == --knative ]]; then
  # On real Knative: the one-node cluster (hack/cluster/up.sh), the operator
  # installed from its release YAML (hack/cluster/install.sh), then the
  # sample Foo. It stays up.
  hack/cluster/up.sh
  echo "==> the release, kubectl apply -f _output/release/foo-operator.yaml"
  hack/cluster/install.sh >/dev/null
  kubectl() { "$(hack/build-tools.sh --path kubectl)" --kubeconfig _output/cluster/kubeconfig "$@"; }
  # The adapters restart when their sink or the namespaces change, and what
  # changes before a new adapter lists is not sent (the resync that the new
  # adapter asks for restores it): wait for them to point at the Service and
  # settle.
  kubectl -n foo-operator wait apiserversource --all --timeout=3m \
    --for=jsonpath='{.status.sinkUri}'=http://foo-reconciler.foo-operator.svc.cluster.local >/dev/null
  kubectl -n foo-operator rollout status deployment --timeout=3m \
    -l eventing.knative.dev/source=apiserver-source-controller >/dev/null
  echo "==> kubectl apply -f config/samples/example-foo.yaml (the reconciler wakes from zero)"
  kubectl apply -f config/samples/example-foo.yaml
  kubectl wait --for=condition=Ready foo/example-foo --timeout=5m
  kubectl get foo/example-foo deployment/example-foo
  echo "==> export KUBECONFIG=$ROOT/_output/cluster/kubeconfig; hack/cluster/down.sh stops it all"
  exit
fi
hack/build-tools.sh etcd kube-apiserver kube-controller-manager kubectl adapter
go build -o _output/bin/run ./hack/run
exec _output/bin/run "$@"
