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

# Regenerates, for each API tree (the Foo operator's pkg/apis and the
# example's under examples/), the deepcopy functions of its pkg/apis and
# everything under its pkg/client, then the reconcilers' uncached listers
# (their go:generate lines), offline: the generators come from the module
# cache at the versions go.mod pins (knative.dev/hack's codegen library is
# not used; it runs `go run ...@latest`).
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

# generate DIR GROUP/VERSION...: generates DIR/pkg/client from the API
# versions DIR/pkg/apis/GROUP/VERSION (DIR is relative to the module root;
# "." is the root itself).
generate() {
  local dir=$1; shift
  local root="$ROOT" pkg="$MODULE"
  if [[ "$dir" != "." ]]; then root="$ROOT/$dir" pkg="$MODULE/$dir"; fi
  local inputs=()
  for gv in "$@"; do inputs+=("$pkg/pkg/apis/$gv"); done

  # kube_codegen.sh's functions assign globals (dir, pkg, leaf, arg, ...),
  # which bash's dynamic scoping would write into this function's locals:
  # each runs in a subshell.
  echo "== $dir: deepcopy"
  (kube::codegen::gen_helpers --boilerplate "$BOILERPLATE" "$root/pkg/apis")

  echo "== $dir: clientset, listers, informers"
  (kube::codegen::gen_client --with-watch \
    --output-dir "$root/pkg/client" --output-pkg "$pkg/pkg/client" \
    --boilerplate "$BOILERPLATE" "$root/pkg/apis") 2> >(grep -v 'No such file or directory' >&2)

  echo "== $dir: knative injection and genreconciler"
  # injection-gen never deletes stale files.
  rm -rf "$root/pkg/client/injection"
  go run knative.dev/pkg/codegen/cmd/injection-gen \
    --go-header-file "$BOILERPLATE" \
    --input-dirs "$(IFS=,; echo "${inputs[*]}")" \
    --versioned-clientset-package "$pkg/pkg/client/clientset/versioned" \
    --external-versions-informers-package "$pkg/pkg/client/informers/externalversions" \
    --listers-package "$pkg/pkg/client/listers" \
    --output-package "$pkg/pkg/client/injection" \
    --output-dir "$root/pkg/client/injection"
  local f
  for f in "$root"/pkg/client/injection/reconciler/*/*/*/reconciler.go; do drop_status_diff "$f"; done
}

# drop_status_diff FILE: takes out of a generated reconciler the debug log of
# its status diff. kmp.SafeDiff (go-cmp) calls reflect.Type.Method, which
# turns off the linker's dead-method elimination: every exported method of
# every reachable type stays in the binary, the full clientset's included
# (a reconciler of the generated code alone took 46.7 MB with it, 28.9 MB
# without). The status written is the same; only that debug line is gone.
drop_status_diff() {
  local f=$1
  perl -0pi -e 's/\n\t\tif logger\.Desugar\(\)\.Core\(\)\.Enabled\(zapcore\.DebugLevel\) \{\n\t\t\tif diff, err := kmp\.SafeDiff\(existing\.Status, desired\.Status\); err == nil && diff != "" \{\n\t\t\t\tlogger\.Debug\("Updating status with: ", diff\)\n\t\t\t\}\n\t\t\}\n//; s/\n\tzapcore "go\.uber\.org\/zap\/zapcore"//; s/\n\tkmp "knative\.dev\/pkg\/kmp"//' "$f"
  if grep -q 'kmp\.\|zapcore' "$f"; then
    echo "$f: the generated status diff changed: update drop_status_diff" >&2
    return 1
  fi
}

generate . samplecontroller/v1alpha1
generate examples/bar-operator example/v1alpha1

echo "== the uncached listers (go:generate lines of the reconcilers)"
go generate ./pkg/reconciler/... ./examples/...
