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

# Stops the one-node cluster that up.sh started and leaves the host as up.sh
# found it: processes stopped by the PIDs up.sh recorded (kubelet first, then
# every pod through containerd), mounts and cgroups removed, iptables rules,
# sysctls and the paths Kubernetes writes to restored, the bridge deleted,
# _output/cluster removed. The images stay cached in _output/images.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ -d $CLUSTER_DIR ]] || exit 0
log "Stopping the one-node cluster"
H=$CLUSTER_DIR/host

# stop NAME: SIGTERM to the process up.sh started as NAME, SIGKILL after 10 s.
stop() {
  local f=$CLUSTER_DIR/pids/$1 pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -TERM "$pid" 2>/dev/null; then
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$f"
}

# Kubelet first, so that it does not restart what is stopped next.
stop kubelet
# Every pod's containers and sandboxes, through containerd while it runs: the
# shims exit once their tasks are deleted.
sock=$CLUSTER_DIR/containerd/containerd.sock
if running containerd && [[ -S $sock ]]; then
  ctr() { command ctr --address "$sock" --namespace k8s.io "$@"; }
  for t in $(ctr tasks ls -q 2>/dev/null); do ctr tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
  for t in $(ctr tasks ls -q 2>/dev/null); do ctr tasks delete -f "$t" >/dev/null 2>&1; done
  for c in $(ctr containers ls -q 2>/dev/null); do ctr containers delete "$c" >/dev/null 2>&1; done
fi
for name in kube-proxy coredns traefik scheduler controller-manager apiserver etcd containerd registry; do stop "$name"; done

# The pods' cgroups: kubelet's kubepods, in every hierarchy, if up.sh did not
# find it there. What is left in them (a shim that outlived containerd) is
# killed, then they are removed, deepest first.
if [[ -f $H/cgroups ]]; then
  pods=$(find /sys/fs/cgroup -mindepth 2 -maxdepth 2 -type d -name kubepods | grep -vxFf "$H/cgroups")
  for dir in $pods; do
    find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null
  done
  sleep 0.5
  for dir in $pods; do
    find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
  done
fi

# Mounts under the cluster's folder (overlays, network namespaces, volumes), deepest first.
findmnt -rn -o TARGET | grep "^$CLUSTER_DIR/" | sort -r | while read -r m; do
  umount "$m" 2>/dev/null || umount -l "$m"
done

ip link delete "$BRIDGE" 2>/dev/null

if [[ -f $H/iptables ]]; then
  for cmd in iptables ip6tables; do
    for t in filter nat mangle raw security; do
      "$cmd" -t "$t" -F 2>/dev/null; "$cmd" -t "$t" -X 2>/dev/null
    done
    "$cmd-restore" <"$H/$cmd"
  done
  # Tables that did not exist before (iptables-nft makes them on first use).
  nft list tables 2>/dev/null | grep -vxFf "$H/nft-tables" | while read -r _ family name; do
    nft delete table "$family" "$name"
  done
fi
if [[ -f $H/sysctls ]]; then
  while IFS= read -r kv; do sysctl -q -w "$kv" >/dev/null; done <"$H/sysctls"
fi
if [[ -f $H/paths ]]; then
  for p in "${HOST_PATHS[@]}"; do
    grep -qxF "$p" "$H/paths" || rm -rf --one-file-system "$p"
  done
fi

findmnt -rn -o TARGET | grep -q "^$CLUSTER_DIR/" && { echo "mounts remain under $CLUSTER_DIR" >&2; exit 1; }
rm -rf --one-file-system "$CLUSTER_DIR"
log "Stopped; the host is restored"
