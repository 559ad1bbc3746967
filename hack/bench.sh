#!/usr/bin/env bash
# Measures this project's reconciler beside the classic informer-based
# sample-controller (stock and raised-QPS) on one loopback API server, and
# writes bench/results/<time>/{results.md,results.json,chart.png}.
# Flags go to hack/bench (see -help); e.g. hack/bench.sh -n 100,1000 -idle 10s
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
hack/build-tools.sh
out=bench/results/$(date -u +%Y-%m-%dT%H-%M)
go run ./hack/bench -out "$out" "$@"
(cd hack/tools/chart && go run . "$ROOT/$out/results.json" "$ROOT/$out/chart.png")
echo "chart: $out/chart.png"
