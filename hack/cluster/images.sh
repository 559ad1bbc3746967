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

# Builds the one-node cluster's images into its local registry (which must be
# running: up.sh starts it), only those missing. Cached in _output/images:
#   base:root, base:static   an image from scratch: /etc/passwd (root, nonroot
#                            65532), /tmp and CA certificates; static runs as 65532
#   pause:3.10               the pod sandbox (images/pause)
#   library/nginx:latest     what Foos' Deployments run, as docker.io's nginx (images/nginx)
#   kn/...                   Knative Serving and Eventing, built by ko; the
#                            release YAML that names them by digest is
#                            _output/images/knative-<version>.yaml
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The tools' own output goes to a log, shown if a build fails.
mkdir -p "$IMAGES_DIR"
BUILD_LOG=$IMAGES_DIR/build.log
: >"$BUILD_LOG"
trap '[[ $? == 0 ]] || { echo "building images failed; the end of $BUILD_LOG:" >&2; tail -20 "$BUILD_LOG" >&2; }' EXIT
crane() { "$(tool crane)" "$@" 2>>"$BUILD_LOG"; }
ko() { "$(tool ko)" "$@" 2>>"$BUILD_LOG"; }
has() { crane digest "$REGISTRY/$1" >/dev/null 2>&1; }
RELEASE=$IMAGES_DIR/knative-$KNATIVE_VERSION.yaml
KNATIVE_MODULE=$ROOT/hack/tools/knative

# layer DIR OUT: a tar of DIR's contents, owned by root.
layer() { tar -C "$1" --owner=0 --group=0 --numeric-owner -cf "$2" .; }

build_base() {
  local tmp; tmp=$(mktemp -d)
  mkdir -p "$tmp/root/etc/ssl/certs" "$tmp/root/tmp" "$tmp/root/home/nonroot"
  chmod 1777 "$tmp/root/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$tmp/root/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$tmp/root/etc/group"
  cp /etc/ssl/certs/ca-certificates.crt "$tmp/root/etc/ssl/certs/"
  layer "$tmp/root" "$tmp/base.tar"
  crane append --oci-empty-base -f "$tmp/base.tar" -t "$REGISTRY/base:raw" >/dev/null
  crane mutate "$REGISTRY/base:raw" --set-platform linux/amd64 -t "$REGISTRY/base:root" >/dev/null
  crane mutate "$REGISTRY/base:root" --user 65532 -t "$REGISTRY/base:static" >/dev/null
  rm -rf "$tmp"
}

# build_program NAME IMAGE: the Go program images/NAME as /NAME on base:root.
build_program() {
  local tmp; tmp=$(mktemp -d)
  mkdir -p "$tmp/root"
  (cd "$ROOT" && CGO_ENABLED=0 go build 2>>"$BUILD_LOG" -trimpath -ldflags "-s -w" -o "$tmp/root/$1" "./hack/cluster/images/$1")
  layer "$tmp/root" "$tmp/layer.tar"
  crane append -b "$REGISTRY/base:root" -f "$tmp/layer.tar" -t "$REGISTRY/$2.tmp" >/dev/null
  crane mutate "$REGISTRY/$2.tmp" --entrypoint "/$1" -t "$REGISTRY/$2" >/dev/null
  rm -rf "$tmp"
}

# knative_config DIR: Serving's and Eventing's install YAML, from their module
# zips, into DIR. Serving's zip lacks the files its repository symlinks from
# knative.dev/networking and knative.dev/caching: they are taken from those
# modules, at the versions Serving pins. Eventing's JobSink and RequestReply
# Deployments are left out (nothing here uses them; two fewer images and pods).
knative_config() {
  local dir=$1 serving eventing networking caching
  dir_of() { (cd "$KNATIVE_MODULE" && go mod download "$1" && go list -m -f '{{.Dir}}' "$1"); }
  serving=$(dir_of knative.dev/serving); eventing=$(dir_of knative.dev/eventing)
  networking=$(dir_of knative.dev/networking); caching=$(dir_of knative.dev/caching)
  mkdir -p "$dir/serving" "$dir/eventing/core" "$dir/eventing/imc" "$dir/eventing/mtbroker" "$dir/eventing/integrations"
  cp -r "$serving/config/core/." "$dir/serving/"
  cp "$networking"/config/{certificate,domain-claim,ingress,serverlessservice}.yaml "$dir/serving/300-resources/"
  cp "$networking/config/config-network.yaml" "$dir/serving/configmaps/network.yaml"
  cp "$caching/config/image.yaml" "$dir/serving/300-resources/image.yaml"
  cp -r "$eventing/config/core/." "$dir/eventing/core/"
  cp -r "$eventing/config/channels/in-memory-channel/." "$dir/eventing/imc/"
  cp -r "$eventing/config/brokers/mt-channel-broker/." "$dir/eventing/mtbroker/"
  cp "$eventing"/third_party/eventing-integrations-latest/*.yaml "$dir/eventing/integrations/"
  chmod -R u+w "$dir"
  rm "$dir"/eventing/core/deployments/{job-sink,request-reply}.yaml
  find "$dir" -type f ! -name '*.yaml' -delete
}

# build_knative: every image Knative's YAML names (ko://...), built by ko and
# pushed to the registry; the YAML, resolved to digests and with requests
# lowered (lowerrequests), written to $RELEASE.
build_knative() {
  local tmp; tmp=$(mktemp -d)
  knative_config "$tmp/config"
  (cd "$KNATIVE_MODULE" && GOFLAGS=-mod=mod KO_DOCKER_REPO=$REGISTRY/kn KO_DEFAULTBASEIMAGE=$REGISTRY/base:static \
    ko resolve --preserve-import-paths --platform=linux/amd64 --sbom=none -R -f "$tmp/config" >"$tmp/resolved.yaml")
  (cd "$KNATIVE_MODULE" && go run ./lowerrequests) <"$tmp/resolved.yaml" >"$tmp/release.yaml"
  mv "$tmp/release.yaml" "$RELEASE"
  rm -rf "$tmp"
}

# The registry keeps blobs on disk but manifests in memory: every image's
# manifest is saved beside the blobs, and put back when the registry starts.
MANIFESTS=$IMAGES_DIR/manifests
save_manifests() {
  local repo tag
  for repo in $(crane catalog "$REGISTRY"); do
    for tag in $(crane ls "$REGISTRY/$repo"); do
      mkdir -p "$MANIFESTS/$repo"
      crane manifest "$REGISTRY/$repo:$tag" >"$MANIFESTS/$repo/$tag.json"
    done
  done
}
restore_manifests() {
  local f repo tag type
  [[ -d $MANIFESTS ]] || return 0
  while IFS= read -r f; do
    repo=${f#"$MANIFESTS/"}; repo=${repo%/*}; tag=$(basename "$f" .json)
    type=$(grep -o '"mediaType": *"[^"]*"' "$f" | head -1 | sed 's/.*: *"\(.*\)"/\1/')
    curl -sf -X PUT -H "Content-Type: $type" --data-binary "@$f" "http://$REGISTRY_ADDR/v2/$repo/manifests/$tag" >/dev/null
  done < <(find "$MANIFESTS" -name '*.json')
}

# image NAME FUNCTION ARGS...: runs FUNCTION unless the registry has NAME.
image() {
  local name=$1; shift
  if has "$name"; then return; fi
  local start=$SECONDS
  log "Building image $name"
  "$@"
  log "Built $name in $((SECONDS - start))s"
}

restore_manifests
image base:static build_base
image pause:3.10 build_program pause pause:3.10
image library/nginx:latest build_program nginx library/nginx:latest
# The release YAML is written last: if it exists, its images were pushed.
if [[ ! -f $RELEASE ]] || ! has "$(grep -m1 -o 'kn/[^"@ ]*@sha256:[0-9a-f]*' "$RELEASE")"; then
  start=$SECONDS
  log "Building Knative $KNATIVE_VERSION's images with ko (minutes on a cold cache)"
  build_knative
  log "Built Knative's images in $((SECONDS - start))s"
fi
save_manifests
