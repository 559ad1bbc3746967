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

# Makes a release: ko builds the images for $PLATFORMS, pushes them to
# $KO_DOCKER_REPO and writes, into $OUT (default _output/release):
#
#   foo-operator.yaml     config/, images by digest: `kubectl apply -f` installs it
#   foo-operator-scale-out.yaml  config/scale-out/: the Leases' Role, for
#                         more than one reconciler pod (docs/configuration.md)
#   operator-stream/      stream/: the shared event stream, for a cluster's
#                         kustomization (docs/shared-stream.md)
#   foo-operator-stream/  config/stream/: the Component by which the Foo
#                         operator joins it
#   examples/             the example Bar operator: bar-operator.yaml, and
#                         its Component bar-operator-stream/
#   assets/               the files a GitHub release carries (docs/install.md):
#                         foo-operator.yaml, bar-operator.yaml, and each
#                         folder above as a .tar.gz that unpacks to its place
#                         in this layout
#
# each labelled app.kubernetes.io/version=VERSION. VERSION is a tag of the
# form vMAJOR.MINOR.PATCH (see CHANGELOG.md), or "devel" (the default) for
# a build of the working tree.
#
#   KO_DOCKER_REPO=ghcr.io/you/foo-operator hack/release.sh v0.1.0
#
# PLATFORMS (default linux/amd64,linux/arm64) are the platforms the images
# are built for, among those of the base image. KO_DEFAULTBASEIMAGE, if set,
# replaces .ko.yaml's base image (the local cluster's registry has its own).
# KO names the ko binary; else the one on PATH, else hack/build-tools.sh
# builds one.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

VERSION=${1:-devel}
if [[ "$VERSION" != devel && ! "$VERSION" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release.sh: version $VERSION is neither devel nor vMAJOR.MINOR.PATCH" >&2
  exit 2
fi
: "${KO_DOCKER_REPO:?set KO_DOCKER_REPO to the registry the images go to}"
OUT=${OUT:-"$ROOT/_output/release"}
PLATFORMS=${PLATFORMS:-linux/amd64,linux/arm64}
mkdir -p "$OUT"
KO=${KO:-$(command -v ko || true)}
if [[ -z "$KO" ]]; then
  "$ROOT/hack/build-tools.sh" ko >/dev/null # builds it only if missing
  KO=$("$ROOT/hack/build-tools.sh" --path ko)
fi

# stamp sets the version labels the manifests carry as "devel".
stamp() {
  sed -e "s|^\(    app.kubernetes.io/version:\) devel$|\1 $VERSION|" \
      -e "s|^\(    samplecontroller.knative.io/release:\) devel$|\1 $VERSION|"
}

# resolve FILE -f PATH...: ko resolves the manifests into FILE, images by
# digest, each named after its command ($KO_DOCKER_REPO/foo-reconciler).
resolve() {
  local out=$1
  shift
  "$KO" resolve --platform="$PLATFORMS" --base-import-paths --sbom=none "$@" 2> >(grep -v -e '^20[0-9][0-9]/' -e 'git is in a dirty state' -e '^Please check' -e '^ M \|^?? ' -e '^$' >&2) \
    | stamp >"$out.tmp"
  mv "$out.tmp" "$out"
}
# component DIR OUT: a kustomize Component (it names no image), stamped.
component() {
  rm -rf "$2" && mkdir -p "$2"
  for f in "$1"/*.yaml; do stamp <"$f" >"$2/$(basename "$f")"; done
}
mkdir -p "$OUT/operator-stream" "$OUT/examples"
resolve "$OUT/foo-operator.yaml" -f config/
stamp <config/scale-out/200-buckets.yaml >"$OUT/foo-operator-scale-out.yaml"
# The stream's manifests in one file (its kustomization.yaml left out), and
# a kustomization that names that file.
stream_files=()
for f in stream/*.yaml; do [[ $f == */kustomization.yaml ]] || stream_files+=(-f "$f"); done
resolve "$OUT/operator-stream/operator-stream.yaml" "${stream_files[@]}"
cat >"$OUT/operator-stream/kustomization.yaml" <<EOF
# The shared event stream $VERSION (stream/ in the source tree), for a
# cluster's kustomization: docs/shared-stream.md.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- operator-stream.yaml
EOF
component config/stream "$OUT/foo-operator-stream"
resolve "$OUT/examples/bar-operator.yaml" -f examples/bar-operator/config/
component examples/bar-operator/config/stream "$OUT/examples/bar-operator-stream"
if grep -rn 'ko://' "$OUT"; then
  echo "release.sh: an image was left unresolved" >&2
  exit 1
fi

# The release's assets: a GitHub release holds files, not folders, so each
# folder goes as NAME.tar.gz, which unpacks to the same path as in $OUT
# (the same bytes for the same files: sorted, owned by root, dated 1970).
tgz() {
  tar -C "$OUT" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - "$2" | gzip -9n >"$OUT/assets/$1.tar.gz"
}
rm -rf "$OUT/assets" && mkdir -p "$OUT/assets"
cp "$OUT/foo-operator.yaml" "$OUT/foo-operator-scale-out.yaml" "$OUT/examples/bar-operator.yaml" "$OUT/assets/"
tgz operator-stream operator-stream
tgz foo-operator-stream foo-operator-stream
tgz bar-operator-stream examples/bar-operator-stream
echo "$OUT/foo-operator.yaml"
echo "$OUT/foo-operator-scale-out.yaml"
echo "$OUT/operator-stream/"
echo "$OUT/foo-operator-stream/"
echo "$OUT/examples/"
echo "$OUT/assets/"
