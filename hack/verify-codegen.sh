#!/usr/bin/env bash
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
