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

# Shared by up.sh, down.sh and images.sh: where the one-node cluster lives,
# its addresses, and small helpers. Sourced, not run.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

# Everything a run writes: PIDs, logs, certificates, etcd, containerd, kubelet.
# Wiped by down.sh. The images (registry) are cached apart, in IMAGES_DIR.
CLUSTER_DIR=${CLUSTER_DIR:-$ROOT/_output/cluster}
IMAGES_DIR=${IMAGES_DIR:-$ROOT/_output/images}
KUBECONFIG_FILE=$CLUSTER_DIR/kubeconfig

KNATIVE_VERSION=v0.50.0

# The node is the host. Its address is the pod bridge's own: every server
# listens on it or on 127.0.0.1, never on the machine's other interfaces.
BRIDGE=knbr0
NODE_IP=10.244.0.1
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
API_PORT=6443
API_SERVER=https://$NODE_IP:$API_PORT
ETCD_PORT=24379
# The image registry: named localhost:5000 in image references, served on loopback.
REGISTRY=localhost:5000
REGISTRY_ADDR=127.0.0.1:5000

# The host state the cluster changes, restored by down.sh from what up.sh saw.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward
  net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables
  net.bridge.bridge-nf-call-ip6tables net.ipv6.conf.all.forwarding)
HOST_PATHS=(/var/log/containers /var/log/pods /var/lib/kubelet /run/containerd
  /etc/cni /var/lib/cni /opt/cni /run/netns /etc/kubernetes)

tool() { "$ROOT/hack/build-tools.sh" --path "$1"; }
log() { echo "==> $*"; }

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND until it succeeds.
wait_for() {
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then echo "timed out waiting for $what" >&2; return 1; fi
    sleep 1
  done
}

kubectl() { "$(tool kubectl)" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# start NAME COMMAND...: runs COMMAND in the background, its output in
# logs/NAME.log, its PID in pids/NAME (down.sh stops it by that PID).
start() {
  local name=$1; shift
  mkdir -p "$CLUSTER_DIR/logs" "$CLUSTER_DIR/pids"
  setsid "$@" >"$CLUSTER_DIR/logs/$name.log" 2>&1 < /dev/null &
  echo $! >"$CLUSTER_DIR/pids/$name"
}

# running NAME: whether the process started as NAME is alive.
running() {
  local f=$CLUSTER_DIR/pids/$1
  [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null
}

# render FILE: the file from conf/ with @VAR@ replaced by the variable's value.
render() {
  sed -e "s|@CLUSTER_DIR@|$CLUSTER_DIR|g" -e "s|@NODE_IP@|$NODE_IP|g" \
    -e "s|@POD_CIDR@|$POD_CIDR|g" -e "s|@BRIDGE@|$BRIDGE|g" \
    -e "s|@REGISTRY_ADDR@|$REGISTRY_ADDR|g" -e "s|@REGISTRY@|$REGISTRY|g" \
    -e "s|@API_SERVER@|$API_SERVER|g" \
    "$ROOT/hack/cluster/conf/$1"
}
