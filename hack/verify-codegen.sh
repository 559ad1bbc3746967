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

# Fails when the generated code in the tree differs from what
# hack/update-codegen.sh makes of the current sources.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

tar -C "$ROOT" --exclude=./_output --exclude=./.git -cf - . | tar -C "$TMP" -xf -
GOBIN=${GOBIN:-"$ROOT/_output/bin"} "$TMP/hack/update-codegen.sh" >/dev/null

status=0
# Every tree hack/update-codegen.sh writes into.
for dir in pkg examples; do
  diff -Nur "$ROOT/$dir" "$TMP/$dir" || status=1
done
diff -u "$ROOT/go.mod" "$TMP/go.mod" || status=1
if [[ $status -ne 0 ]]; then
  echo "Generated code is out of date: run hack/update-codegen.sh" >&2
  exit 1
fi
echo "Generated code is up to date."
