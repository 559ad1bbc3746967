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

# Brings up a one-node Kubernetes cluster with Knative Serving and Eventing
# on this machine, all built from source (hack/build-tools.sh, images.sh) and
# cached in _output: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, containerd and runc (Debian's), kubelet, kube-proxy, CoreDNS
# and Traefik (Knative's ingress) as host processes, a local image registry,
# and Knative's controllers as pods. Leaves it running and prints the
# kubeconfig; hack/cluster/down.sh stops it and restores the host. Running it
# again while the cluster is up does nothing. Needs root.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
begin=$SECONDS

if running apiserver && kubectl get --raw /readyz >/dev/null 2>&1; then
  log "The cluster is already up: export KUBECONFIG=$KUBECONFIG_FILE"
  exit 0
fi
[[ $(id -u) == 0 ]] || { echo "hack/cluster/up.sh needs root (containerd, kubelet, iptables)" >&2; exit 1; }
# What a previous run left (it was stopped without down.sh): clean it first.
[[ -d $CLUSTER_DIR ]] && "$ROOT/hack/cluster/down.sh"
# Whatever fails from here on, leave the host as it was (the logs are kept).
failed() {
  echo "hack/cluster/up.sh failed; the cluster's logs are in $ROOT/_output/cluster-failed" >&2
  rm -rf "$ROOT/_output/cluster-failed"
  cp -r "$CLUSTER_DIR/logs" "$ROOT/_output/cluster-failed" 2>/dev/null
  "$ROOT/hack/cluster/down.sh"
}
trap failed EXIT

ensure_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v nft >/dev/null || missing+=(nftables)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v curl >/dev/null || missing+=(curl)
  command -v ip >/dev/null || missing+=(iproute2)
  ((${#missing[@]} == 0)) && return
  log "Installing Debian's ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

# save_host: what down.sh restores.
save_host() {
  local d=$CLUSTER_DIR/host
  mkdir -p "$d"
  for s in "${SYSCTLS[@]}"; do
    v=$(sysctl -n "$s" 2>/dev/null) && echo "$s=$v"
  done >"$d/sysctls"
  iptables-save >"$d/iptables"
  ip6tables-save >"$d/ip6tables"
  nft list tables >"$d/nft-tables"
  for p in "${HOST_PATHS[@]}"; do [[ -e $p ]] && echo "$p"; done >"$d/paths" || true
  find /sys/fs/cgroup -mindepth 2 -maxdepth 2 -type d >"$d/cgroups"
  ip link show "$BRIDGE" >/dev/null 2>&1 && { echo "a link named $BRIDGE exists already" >&2; return 1; }
  return 0
}

pki() {
  local d=$CLUSTER_DIR/pki
  mkdir -p "$d"
  (
    cd "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 -subj /CN=onenode-ca 2>/dev/null
    # cert NAME SUBJECT EXTENSIONS: a key and a certificate signed by the CA.
    cert() {
      openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      printf '%b' "$3" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 30 -extfile "$1.ext" 2>/dev/null
    }
    cert apiserver /CN=kube-apiserver "subjectAltName=IP:10.96.0.1,IP:$NODE_IP,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost\nextendedKeyUsage=serverAuth\n"
    cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth\n"
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    echo "$(openssl rand -hex 24),admin,admin,system:masters" >tokens.csv
  )
  local token; token=$(cut -d, -f1 "$d/tokens.csv")
  cat >"$KUBECONFIG_FILE" <<KC
apiVersion: v1
kind: Config
clusters:
- name: onenode
  cluster: {server: "$API_SERVER", certificate-authority: "$d/ca.crt"}
users:
- name: admin
  user: {token: "$token"}
contexts:
- name: onenode
  context: {cluster: onenode, user: admin}
current-context: onenode
KC
}

ensure_packages
mkdir -p "$CLUSTER_DIR"/{logs,pids,cni/net.d,containerd}
save_host

log "Building what is missing (hack/build-tools.sh; cached in _output/tools)"
"$ROOT/hack/build-tools.sh" etcd kube-apiserver kube-controller-manager kubectl cluster | grep -v ': cached at' || true

log "Starting the image registry on $REGISTRY_ADDR ($IMAGES_DIR)"
mkdir -p "$IMAGES_DIR/registry"
start registry "$(tool crane)" registry serve --address "$REGISTRY_ADDR" --disk "$IMAGES_DIR/registry"
wait_for 30 "the registry" curl -sf "http://$REGISTRY_ADDR/v2/"
"$ROOT/hack/cluster/images.sh"

log "Creating the pod bridge $BRIDGE ($NODE_IP) and the certificates"
ip link add "$BRIDGE" type bridge
ip addr add "$NODE_IP/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
pki
for f in containerd.toml kubelet.yaml kube-proxy.yaml Corefile resolv.conf audit-policy.yaml; do render "$f" >"$CLUSTER_DIR/$f"; done
render 10-bridge.conflist >"$CLUSTER_DIR/cni/net.d/10-bridge.conflist"

log "Starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler"
# The audit log is read by byte offset; its writer (lumberjack) rotates at
# --audit-log-maxsize MiB, 100 when given 0, so the size is set past any run's.
start etcd "$(tool etcd)" --name onenode --data-dir "$CLUSTER_DIR/etcd" --unsafe-no-fsync \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls http://127.0.0.1:24380 --initial-advertise-peer-urls http://127.0.0.1:24380 \
  --initial-cluster onenode=http://127.0.0.1:24380 --listen-metrics-urls "" --quota-backend-bytes 2147483648
P=$CLUSTER_DIR/pki
start apiserver "$(tool kube-apiserver)" --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
  --bind-address="$NODE_IP" --secure-port="$API_PORT" --advertise-address="$NODE_IP" \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" --token-auth-file="$P/tokens.csv" \
  --kubelet-client-certificate="$P/kubelet-client.crt" --kubelet-client-key="$P/kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-cluster-ip-range="$SERVICE_CIDR" --authorization-mode=Node,RBAC \
  --allow-privileged=true --enable-aggregator-routing=true \
  --audit-policy-file="$CLUSTER_DIR/audit-policy.yaml" --audit-log-path="$CLUSTER_DIR/logs/audit.log" \
  --audit-log-format=json --audit-log-mode=blocking --audit-log-maxsize=10240
wait_for 60 kube-apiserver kubectl get --raw /readyz
K=$CLUSTER_DIR/kubeconfig
start controller-manager "$(tool kube-controller-manager)" --kubeconfig="$K" \
  --authentication-kubeconfig="$K" --authorization-kubeconfig="$K" --leader-elect=false \
  --secure-port=20257 --bind-address=127.0.0.1 --service-account-private-key-file="$P/sa.key" \
  --root-ca-file="$P/ca.crt" --service-cluster-ip-range="$SERVICE_CIDR" --use-service-account-credentials=true
start scheduler "$(tool kube-scheduler)" --kubeconfig="$K" --authentication-kubeconfig="$K" \
  --authorization-kubeconfig="$K" --leader-elect=false --secure-port=20259 --bind-address=127.0.0.1

log "Starting containerd, kubelet, kube-proxy, CoreDNS, Traefik"
start containerd containerd --config "$CLUSTER_DIR/containerd.toml"
wait_for 30 containerd test -S "$CLUSTER_DIR/containerd/containerd.sock"
start kubelet "$(tool kubelet)" --config="$CLUSTER_DIR/kubelet.yaml" --kubeconfig="$K" \
  --hostname-override=onenode --node-ip="$NODE_IP" --root-dir="$CLUSTER_DIR/kubelet" \
  --cert-dir="$CLUSTER_DIR/kubelet/pki" -v=1
start kube-proxy "$(tool kube-proxy)" --config="$CLUSTER_DIR/kube-proxy.yaml"
start coredns "$(tool coredns)" -conf "$CLUSTER_DIR/Corefile"
start traefik "$(tool traefik)" --experimental.knative=true \
  --providers.knative.endpoint="$API_SERVER" --providers.knative.token="$(cut -d, -f1 "$P/tokens.csv")" \
  --providers.knative.certAuthFilePath="$P/ca.crt" \
  --providers.knative.privateEntrypoints=private --providers.knative.privateService.name=traefik-private \
  --providers.knative.privateService.namespace=traefik \
  --providers.knative.publicEntrypoints=public --providers.knative.publicService.name=traefik-public \
  --providers.knative.publicService.namespace=traefik \
  --entryPoints.private.address="$NODE_IP:18081" --entryPoints.public.address="$NODE_IP:18080" \
  --global.checkNewVersion=false --global.sendAnonymousUsage=false --log.level=INFO
wait_for 120 "the node to be Ready" kubectl wait --for=condition=Ready node/onenode --timeout=1s
wait_for 30 CoreDNS curl -sf http://127.0.0.1:20281/ready

log "Installing Knative Serving and Eventing $KNATIVE_VERSION"
render traefik.yaml | kubectl apply -f - >/dev/null
RELEASE=$IMAGES_DIR/knative-$KNATIVE_VERSION.yaml
# The first pass makes the CRDs (objects of their kinds fail until they are
# established) and the webhooks; the second, once those answer, everything.
kubectl apply --server-side -f "$RELEASE" >/dev/null 2>&1 || true
kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
wait_for 300 "Knative's webhooks" kubectl wait --for=condition=Available --timeout=5s \
  -n knative-serving deployment/webhook
wait_for 300 "Knative's webhooks" kubectl wait --for=condition=Available --timeout=5s \
  -n knative-eventing deployment/eventing-webhook
# Forced: the aggregated ClusterRoles' rules are the aggregation controller's.
kubectl apply --server-side --force-conflicts -f "$RELEASE" >/dev/null
render knative.yaml | kubectl apply --server-side --force-conflicts --field-manager=onenode -f - >/dev/null
for ns in knative-serving knative-eventing; do
  wait_for 300 "Knative's Deployments in $ns" kubectl -n "$ns" wait --for=condition=Available deployment --all --timeout=5s
done

trap - EXIT
log "Up in $((SECONDS - begin))s: export KUBECONFIG=$KUBECONFIG_FILE (hack/cluster/down.sh stops it)"
