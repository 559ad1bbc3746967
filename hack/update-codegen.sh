#!/usr/bin/env bash
# Regenerates everything under pkg/client and the deepcopy functions of
# pkg/apis, offline: the generators come from the module cache at the versions
# go.mod pins (knative.dev/hack's codegen library is not used; it runs
# `go run ...@latest`).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
MODULE=$(go list -m)
BOILERPLATE="$ROOT/hack/boilerplate.go.txt"
export GOBIN=${GOBIN:-"$ROOT/_output/bin"}
export GOFLAGS=${GOFLAGS:-} GOTOOLCHAIN=${GOTOOLCHAIN:-local}
case "$GOFLAGS" in *-mod=vendor*) echo "GOFLAGS=-mod=vendor breaks kube_codegen.sh" >&2; exit 1 ;; esac

go mod download k8s.io/code-generator knative.dev/pkg
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
[[ -n "$CODEGEN_PKG" ]] || { echo "k8s.io/code-generator is not in the module cache" >&2; exit 1; }
# kube_codegen.sh installs the generators from code-generator's own module.
(cd "$CODEGEN_PKG" && go mod download)
# shellcheck source=/dev/null
source "$CODEGEN_PKG/kube_codegen.sh"

echo "== deepcopy"
kube::codegen::gen_helpers --boilerplate "$BOILERPLATE" "$ROOT/pkg/apis"

echo "== clientset, listers, informers"
kube::codegen::gen_client --with-watch \
  --output-dir "$ROOT/pkg/client" --output-pkg "$MODULE/pkg/client" \
  --boilerplate "$BOILERPLATE" "$ROOT/pkg/apis" 2> >(grep -v 'No such file or directory' >&2)

echo "== knative injection and genreconciler"
# injection-gen never deletes stale files.
rm -rf "$ROOT/pkg/client/injection"
go run knative.dev/pkg/codegen/cmd/injection-gen \
  --go-header-file "$BOILERPLATE" \
  --input-dirs "$MODULE/pkg/apis/samplecontroller/v1alpha1" \
  --versioned-clientset-package "$MODULE/pkg/client/clientset/versioned" \
  --external-versions-informers-package "$MODULE/pkg/client/informers/externalversions" \
  --listers-package "$MODULE/pkg/client/listers" \
  --output-package "$MODULE/pkg/client/injection" \
  --output-dir "$ROOT/pkg/client/injection"
