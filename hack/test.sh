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

# Runs every test: unit tests and, against a real local control plane and the
# real ApiServerSource adapter, the e2e tests under test/; then the Knative
# suite (test/knative) on a one-node cluster with real Knative Serving and
# Eventing, which it brings up (hack/cluster/up.sh) and down again. Builds
# what the tests need first (cached in _output; only what is missing).
#
#   hack/test.sh [go test flags]             # everything; root
#   hack/test.sh --rootless [go test flags]  # all but the Knative suite, any user
#
# The Knative suite needs root: its cluster runs containerd, kubelet and
# kube-proxy, which change iptables, sysctls, mounts and cgroups (restored by
# hack/cluster/down.sh). The other tests run loopback servers only.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
rootless=false
if [[ "${1:-}" == --rootless ]]; then rootless=true; shift; fi

if $rootless; then
  hack/build-tools.sh default
else
  hack/build-tools.sh default cluster
fi
go test -count=1 "$@" $(go list ./... | grep -v '/test/knative$')
# The library, a module of its own.
(cd pkg/serverless && go test -count=1 "$@" ./...)
if ! $rootless; then
  # Alone: the cluster takes the whole machine. -v prints the wake-up times.
  # Its output is long: on a failure, what each failed test printed is
  # repeated at the end, where a CI log's tail shows it.
  mkdir -p _output
  log=_output/knative-test.log
  if ! go test -count=1 -v -timeout 60m "$@" ./test/knative 2>&1 | tee "$log"; then
    awk '
      /^=== (RUN|CONT|PAUSE|NAME) / { name = $3; next }
      /^ *--- FAIL: / { failed[$3] = 1; next }
      /^ *--- (PASS|SKIP): / { next }
      name != "" { lines[name, ++n[name]] = $0 }
      END {
        for (f in failed) for (g in failed) if (index(g, f "/") == 1) parent[f] = 1
        for (f in failed) {
          if (!(f in n) || (f in parent)) continue
          print "==> What " f " printed (its last 60 lines):"
          for (i = (n[f] > 60 ? n[f] - 59 : 1); i <= n[f]; i++) print lines[f, i]
        }
      }' "$log"
    exit 1
  fi
fi
