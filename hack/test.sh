#!/usr/bin/env bash
# Runs every test: unit tests and, against a real local control plane and the
# real ApiServerSource adapter, the e2e tests under test/. Builds the tools
# the e2e tests need first (cached in _output/tools; only what is missing).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

hack/build-tools.sh
go test -count=1 "$@" ./...
