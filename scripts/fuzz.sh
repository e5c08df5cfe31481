#!/usr/bin/env bash
# Runs every Fuzz* target of the module for FUZZTIME each (default 30s).
# go test can fuzz one target of one package at a time, hence the loop.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime=${FUZZTIME:-30s}
# Minimizing every new interesting input stalls targets whose seeds are real files of tens of
# kilobytes (a few executions a minute instead of hundreds a second): off unless asked for.
minimize=${FUZZMINIMIZETIME:-0}

# Packages whose tests declare a fuzz target (dot dirs such as .tools skipped).
dirs=$(grep -rlE --include='*_test.go' --exclude-dir='.?*' --exclude-dir=node_modules \
  '^func Fuzz[A-Z0-9_]' . | xargs -r -n1 dirname | sort -u)

n=0
for dir in $dirs; do
  if ! list=$(go test -list '^Fuzz' "$dir"); then
    printf '%s\n' "$list" >&2
    echo "fuzz: cannot list the fuzz targets of $dir" >&2
    exit 1
  fi
  for target in $(grep '^Fuzz' <<<"$list"); do
    echo "== fuzz $dir $target for $fuzztime"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$dir"
    n=$((n + 1))
  done
done
echo "fuzz: ran $n target(s) for $fuzztime each"
