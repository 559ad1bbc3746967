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

# restart.sh NAME: restarts one of the cluster's host processes (a name
# hack/cluster/up.sh started, as in _output/cluster/pids: apiserver,
# controller-manager, ...) with the command line it runs: SIGTERM, SIGKILL
# after 10 s if it has not exited (kube-apiserver's graceful shutdown takes a
# minute here), started again. The old process's log is kept as
# logs/NAME.log.N. For the API server it returns once /readyz answers again.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
name=${1:?usage: hack/cluster/restart.sh NAME}
running "$name" || { echo "hack/cluster/restart.sh: $name is not running" >&2; exit 1; }
pid=$(cat "$CLUSTER_DIR/pids/$name")
mapfile -d '' argv <"/proc/$pid/cmdline"
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$pid" 2>/dev/null || true
wait_for 10 "$name to exit" bash -c "! kill -0 $pid"
n=1
while [[ -e $CLUSTER_DIR/logs/$name.log.$n ]]; do n=$((n + 1)); done
mv "$CLUSTER_DIR/logs/$name.log" "$CLUSTER_DIR/logs/$name.log.$n"
start "$name" "${argv[@]}"
if [[ $name == apiserver ]]; then
  wait_for 60 kube-apiserver kubectl get --raw /readyz
fi
log "Restarted $name (was PID $pid, now $(cat "$CLUSTER_DIR/pids/$name"))"
