#!/usr/bin/env bash
# Runs the Go benchmarks, then every bench/*.sh script, keeping all output in
# bench/out/ (timestamped; go-latest.txt points at the newest Go run, ready
# for benchstat). Scripts get BENCH_OUT (absolute) to write extra files to.
#   BENCH=regexp (default .)  BENCH_COUNT=n (default 1)  PKGS (default ./...)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export BENCH_OUT=$PWD/bench/out
mkdir -p "$BENCH_OUT"
stamp=$(date -u +%Y%m%dT%H%M%SZ)

go test -run '^$' -bench "${BENCH:-.}" -benchmem -count "${BENCH_COUNT:-1}" ${PKGS:-./...} |
  tee "$BENCH_OUT/go-$stamp.txt"
ln -sfn "go-$stamp.txt" "$BENCH_OUT/go-latest.txt"

for script in bench/*.sh; do
  [[ -e $script ]] || continue
  echo "== $script"
  bash "$script" 2>&1 | tee "$BENCH_OUT/$(basename "$script" .sh)-$stamp.txt"
done
echo "bench: output kept in bench/out/ (*-$stamp.txt)"
