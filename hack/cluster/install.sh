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

# Installs the operator on the one-node cluster as its users do: ko builds
# the reconciler and applies config/, unchanged. The cluster supplies what is
# local: the registry ko pushes to, and the base image (.ko.yaml's distroless
# base is on gcr.io, which this machine cannot reach). Extra arguments go to
# ko apply (for instance -f config/broker/ after config/).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
KUBECONFIG=$KUBECONFIG_FILE KO_DOCKER_REPO=$REGISTRY/foo-operator KO_DEFAULTBASEIMAGE=$REGISTRY/base:static \
  "$(tool ko)" apply --platform=linux/amd64 --sbom=none -f config/ "$@" 2> >(grep -v -e '^20[0-9][0-9]/' -e 'git is in a dirty state' -e '^Please check' -e '^ M \|^?? ' -e '^$' >&2)
