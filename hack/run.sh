#!/usr/bin/env bash
# Runs the operator end to end on this machine: builds what is missing, starts
# a loopback control plane, the reconciler and two real ApiServerSource
# adapters, applies config/samples/example-foo.yaml and prints the result.
# Ctrl-C stops everything. --once runs, prints and exits.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
hack/build-tools.sh etcd kube-apiserver kube-controller-manager kubectl adapter
go build -o _output/bin/run ./hack/run
exec _output/bin/run "$@"
