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

# Measures this project's reconciler beside the classic informer-based
# sample-controller (raised QPS) on one loopback API server, and
# writes bench/results/<time>/{results.md,results.json,chart.png}.
# Flags go to bench/loopback (see -help); e.g. hack/bench.sh -n 100,1000 -idle 10s
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
hack/build-tools.sh etcd kube-apiserver kubectl adapter sample-controller-raised
out=bench/results/$(date -u +%Y-%m-%dT%H-%M)
go run ./bench/loopback -out "$out" "$@"
(cd hack/tools/chart && go run . "$ROOT/$out/results.json" "$ROOT/$out/chart.png")
echo "chart: $out/chart.png"
