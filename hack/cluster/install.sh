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

# Installs the operator on the one-node cluster as its users do: from the
# release YAML (hack/release.sh, into _output/release), with kubectl apply; no
# ko at install time. The cluster supplies what is local: the registry the
# release's images go to, and the base image (.ko.yaml's distroless base is
# on gcr.io, which this machine cannot reach), which is linux/amd64 only, so
# the images are built for that platform alone. Extra arguments go to kubectl
# apply (for instance -f _output/release/examples/bar-operator.yaml).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
OUT=$ROOT/_output/release KO_DOCKER_REPO=$REGISTRY/foo-operator KO_DEFAULTBASEIMAGE=$REGISTRY/base:static \
  PLATFORMS=linux/amd64 "$ROOT/hack/release.sh" >/dev/null
"$(tool kubectl)" --kubeconfig "$KUBECONFIG_FILE" apply -f "$ROOT/_output/release/foo-operator.yaml" "$@"
