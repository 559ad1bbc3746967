#!/usr/bin/env bash
# Installs the operator on the one-node cluster as its users do: ko builds
# the reconciler and applies config/, unchanged. The cluster supplies what is
# local: the registry ko pushes to, and the base image (.ko.yaml's distroless
# base is on gcr.io, which this machine cannot reach). Extra arguments go to
# ko apply (for instance -f config/broker/ after config/).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"
KUBECONFIG=$KUBECONFIG_FILE KO_DOCKER_REPO=$REGISTRY/foo-operator KO_DEFAULTBASEIMAGE=$REGISTRY/base:static \
  "$(tool ko)" apply --platform=linux/amd64 --sbom=none -f config/ "$@" 2> >(grep -v -e '^20[0-9][0-9]/' -e 'git is in a dirty state' -e '^Please check' -e '^ M \|^?? ' -e '^$' >&2)
