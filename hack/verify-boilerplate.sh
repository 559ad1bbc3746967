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

# Checks that every Go file, shell script and YAML file git tracks (but what
# third_party/ and the files an example's UPSTREAM lists ship from others) starts with the project's license header:
# hack/boilerplate.go.txt for Go, hack/boilerplate.sh.txt for the others
# (after a shebang line, if any). Prints the files that do not; exits 1 then.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# has_header FILE HEADER SKIP: FILE's lines after the first SKIP start with HEADER.
has_header() {
  local n; n=$(wc -l <"$2")
  cmp -s <(tail -n +"$(($3 + 1))" "$1" | head -n "$n") <(head -n "$n" "$2")
}

# Files copied from others into an example, listed in its UPSTREAM file.
upstream=" "
for u in examples/*/UPSTREAM; do
  [[ -f "$u" ]] || continue
  while read -r local _; do
    [[ -z "$local" || "$local" == \#* ]] && continue
    upstream+="$(dirname "$u")/$local "
  done <"$u"
done

missing=0
while IFS= read -r f; do
  [[ "$upstream" == *" $f "* ]] && continue
  case "$f" in
    third_party/*) continue ;;
    *.go) header=hack/boilerplate.go.txt ;;
    *.sh|*.yaml|*.yml|.ci/run) header=hack/boilerplate.sh.txt ;;
    *) continue ;;
  esac
  skip=0
  if [[ "$header" == hack/boilerplate.sh.txt ]] && head -c2 "$f" | grep -q '^#!'; then skip=1; fi
  # Generated Go files carry the header too (hack/update-codegen.sh passes
  # hack/boilerplate.go.txt); build constraints and blank lines may come first.
  if [[ "$f" == *.go ]]; then
    skip=$(awk '/^(\/\/go:build|\/\/ \+build)/ || /^$/ { n++; next } { exit } END { print n + 0 }' "$f")
  fi
  if ! has_header "$f" "$header" "$skip"; then
    echo "no license header: $f"
    missing=1
  fi
done < <(git ls-files --cached --others --exclude-standard)
if [[ $missing -ne 0 ]]; then
  echo "Add the header of hack/boilerplate.go.txt (Go) or hack/boilerplate.sh.txt (the others)."
  exit 1
fi
echo "Every file carries the license header."
