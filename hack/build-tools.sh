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

# Builds the binaries the local control plane and the e2e tests need, each from
# its own tools module under hack/tools, into _output/tools/<name>-<version>/.
# Only what is missing is built. Prints where the binaries are.
#
#   hack/build-tools.sh            # all: etcd, kube-apiserver, kube-controller-manager, kubectl,
#                                  # adapter, sample-controller-raised
#   hack/build-tools.sh etcd kubectl   # just these
#   hack/build-tools.sh cluster    # the one-node cluster's (not built by default):
#                                  # kubelet, kube-scheduler, kube-proxy, coredns, crane, ko, traefik
#   hack/build-tools.sh default cluster   # both lists
#   hack/build-tools.sh actionlint # CI's linter of .github/workflows (.ci/run)
#
# The Kubernetes binaries that are missing are built by one `go build`, which
# links each while it compiles what the next needs.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS_DIR=${TOOLS_DIR:-"$ROOT/_output/tools"}
export GOTOOLCHAIN=${GOTOOLCHAIN:-local} GOFLAGS=${GOFLAGS:-} CGO_ENABLED=${CGO_ENABLED:-0}

ETCD_VERSION=v3.6.8
KUBE_VERSION=v1.35.4
EVENTING_VERSION=v0.50.0
SAMPLE_CONTROLLER_VERSION=v0.35.4
COREDNS_VERSION=v1.15.0
CRANE_VERSION=v0.22.1
KO_VERSION=v0.19.1
TRAEFIK_VERSION=v3.6.12
ACTIONLINT_VERSION=v1.7.12

kube_ldflags() {
  local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  local f=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  echo "-s -w$f"
}

# path_of NAME prints where NAME's binary lives.
path_of() {
  case "$1" in
    etcd) echo "$TOOLS_DIR/etcd-$ETCD_VERSION/etcd" ;;
    kube-apiserver|kube-controller-manager|kubectl|kubelet|kube-scheduler|kube-proxy) echo "$TOOLS_DIR/kube-$KUBE_VERSION/$1" ;;
    coredns) echo "$TOOLS_DIR/coredns-$COREDNS_VERSION/coredns" ;;
    crane) echo "$TOOLS_DIR/crane-$CRANE_VERSION/crane" ;;
    ko) echo "$TOOLS_DIR/ko-$KO_VERSION/ko" ;;
    traefik) echo "$TOOLS_DIR/traefik-$TRAEFIK_VERSION/traefik" ;;
    actionlint) echo "$TOOLS_DIR/actionlint-$ACTIONLINT_VERSION/actionlint" ;;
    # The adapter's path names its wrapper's source too, so a change to it rebuilds.
    adapter) echo "$TOOLS_DIR/eventing-$EVENTING_VERSION/apiserver-receive-adapter-$(cat "$ROOT"/hack/tools/adapter/{main.go,go.mod,go.sum} | sha256sum | cut -c1-8)" ;;
    sample-controller-raised) echo "$TOOLS_DIR/sample-controller-$SAMPLE_CONTROLLER_VERSION/$1" ;;
    *) echo "unknown tool $1" >&2; return 1 ;;
  esac
}

# build_raised_sample_controller builds k8s.io/sample-controller with two
# more flags, --kube-api-qps and --kube-api-burst, set on its rest.Config:
# stock, it keeps client-go's 5 requests/s. The module's source is copied
# from the module cache to a temporary folder and patched there; nothing of
# it is kept.
build_raised_sample_controller() {
  local out=$1 src tmp
  src=$(cd "$ROOT/hack/tools/sample-controller" && go mod download k8s.io/sample-controller && go list -m -f '{{.Dir}}' k8s.io/sample-controller)
  tmp=$(mktemp -d)
  cp -r "$src"/. "$tmp"
  chmod -R u+w "$tmp"
  grep -q 'kubeClient, err := kubernetes.NewForConfig(cfg)' "$tmp/main.go" || { echo "sample-controller's main.go changed: update the patch" >&2; rm -rf "$tmp"; return 1; }
  sed -i 's|^\tkubeClient, err := kubernetes.NewForConfig(cfg)|\tcfg.QPS, cfg.Burst = float32(*kubeAPIQPS), *kubeAPIBurst\n\tkubeClient, err := kubernetes.NewForConfig(cfg)|' "$tmp/main.go"
  grep -q 'cfg.QPS, cfg.Burst' "$tmp/main.go" || { echo "failed to patch sample-controller's main.go" >&2; rm -rf "$tmp"; return 1; }
  cat >> "$tmp/main.go" <<'GO'

var (
	kubeAPIQPS   = flag.Float64("kube-api-qps", 5, "Maximum QPS to the API server (client-go's default: 5).")
	kubeAPIBurst = flag.Int("kube-api-burst", 10, "Maximum burst to the API server (client-go's default: 10).")
)
GO
  (cd "$tmp" && go build -trimpath -ldflags "-s -w" -o "$out" .)
  local rc=$?
  rm -rf "$tmp"
  return $rc
}

# build_trimmed_traefik builds Traefik as pinned, without the ~850 packages of
# cloud SDKs that lego's DNS-challenge providers bring (ACME, and so its DNS
# challenges, is never configured here): a copy of its module in which the one
# call that names them answers an error, built through a copy of the tools
# module that replaces Traefik with it: 1354 packages to compile instead of
# 2201 (8240 files instead of 13938); cold, with an empty Go cache, 514 s.
build_trimmed_traefik() {
  local out=$1 src tmp f
  src=$(cd "$ROOT/hack/tools/traefik" && go mod download github.com/traefik/traefik/v3 && go list -m -f '{{.Dir}}' github.com/traefik/traefik/v3)
  tmp=$(mktemp -d)
  cp -r "$ROOT/hack/tools/traefik" "$tmp/mod"
  cp -r "$src" "$tmp/src"
  chmod -R u+w "$tmp"
  f=$tmp/src/pkg/provider/acme/provider.go
  grep -q 'provider, err = dns.NewDNSChallengeProviderByName(p.DNSChallenge.Provider)' "$f" || { echo "Traefik's acme provider changed: update the patch" >&2; rm -rf "$tmp"; return 1; }
  sed -i -e '\|"github.com/go-acme/lego/v4/providers/dns"|d' \
    -e 's|provider, err = dns.NewDNSChallengeProviderByName(p.DNSChallenge.Provider)|provider, err = nil, fmt.Errorf("DNS challenge provider %q: none is built into this Traefik", p.DNSChallenge.Provider)|' "$f"
  (cd "$tmp/mod" && go mod edit -replace github.com/traefik/traefik/v3=../src && go build -trimpath -ldflags "-s -w" -o "$out" github.com/traefik/traefik/v3/cmd/traefik)
  local rc=$?
  rm -rf "$tmp"
  return $rc
}

# build_kube builds the missing Kubernetes binaries among $@ with one go build.
build_kube() {
  local name out tmp pkgs=() missing=() start=$SECONDS
  for name in "$@"; do
    out=$(path_of "$name")
    if [[ -x "$out" ]]; then echo "== $name: cached at $out"; else missing+=("$name"); pkgs+=("k8s.io/kubernetes/cmd/$name"); fi
  done
  [[ ${#missing[@]} -gt 0 ]] || return 0
  echo "== ${missing[*]}: building (cold, kube-apiserver alone takes ~10 min on 2 cores)"
  tmp=$(mktemp -d)
  (cd "$ROOT/hack/tools/kube" && go build -trimpath -ldflags "$(kube_ldflags)" -o "$tmp/" "${pkgs[@]}")
  mkdir -p "$(dirname "$(path_of "${missing[0]}")")"
  for name in "${missing[@]}"; do mv "$tmp/$name" "$(path_of "$name")"; done
  rmdir "$tmp"
  echo "== ${missing[*]}: built in $((SECONDS - start))s"
}

build() {
  local name=$1 out; out=$(path_of "$name")
  if [[ -x "$out" ]]; then
    echo "== $name: cached at $out"
    return
  fi
  local start=$SECONDS
  echo "== $name: building (cold builds take minutes; the Kubernetes ones ~10 on 2 cores)"
  mkdir -p "$(dirname "$out")"
  case "$name" in
    etcd) (cd "$ROOT/hack/tools/etcd" && go build -trimpath -ldflags "-s -w" -o "$out.tmp" go.etcd.io/etcd/server/v3) ;;
    coredns) (cd "$ROOT/hack/tools/coredns" && go build -trimpath -ldflags "-s -w" -o "$out.tmp" .) ;;
    crane) (cd "$ROOT/hack/tools/img" && go build -trimpath -ldflags "-s -w" -o "$out.tmp" github.com/google/go-containerregistry/cmd/crane) ;;
    ko) (cd "$ROOT/hack/tools/ko" && go build -trimpath -ldflags "-s -w" -o "$out.tmp" github.com/google/ko) ;;
    traefik) build_trimmed_traefik "$out.tmp" ;;
    actionlint) (cd "$ROOT/hack/tools/actionlint" && go build -trimpath -ldflags "-s -w" -o "$out.tmp" github.com/rhysd/actionlint/cmd/actionlint) ;;
    adapter) (cd "$ROOT/hack/tools/adapter" && go build -trimpath -ldflags "-s -w" -o "$out.tmp" .) ;;
    sample-controller-raised) build_raised_sample_controller "$out.tmp" ;;
  esac
  mv "$out.tmp" "$out"
  echo "== $name: built in $((SECONDS - start))s at $out"
}

if [[ "${1:-}" == "--path" ]]; then
  path_of "$2"
  exit
fi

names=()
[[ $# -gt 0 ]] || set -- default
for n in "$@"; do
  case "$n" in
    default) names+=(etcd kube-apiserver kube-controller-manager kubectl adapter sample-controller-raised) ;;
    cluster) names+=(kubelet kube-scheduler kube-proxy coredns crane ko traefik) ;;
    *) names+=("$n") ;;
  esac
done
kube=() others=()
for n in "${names[@]}"; do
  case "$n" in
    kube-*|kubectl|kubelet) kube+=("$n") ;;
    *) others+=("$n") ;;
  esac
done
[[ ${#kube[@]} -eq 0 ]] || build_kube "${kube[@]}"
for n in "${others[@]}"; do build "$n"; done
