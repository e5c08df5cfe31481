#!/usr/bin/env bash
# The plain reader's figures (issue: one schema per snapshot): ls -lR, find
# and a DuckDB count over a snapshot of GLOBBENCH_FILES (default 100,000)
# small files, on fresh mounts of this build (partition columns in names,
# and with --partition-columns) against a baseline build of
# GLOBBENCH_BASE_REF (default 77546eb, the last commit before every file was
# served in its snapshot's schema), measured in the same run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${BENCH_OUT:-bench/out}
mkdir -p "$out" bin
ref=${GLOBBENCH_BASE_REF:-77546eb}
base=$PWD/bin/deltafs-base-$ref
if ! [[ -x $base ]]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  git archive "$ref" | tar -x -C "$tmp"
  (cd "$tmp" && go build -o "$base" ./cmd/deltafs)
fi
go build -o bin/deltafs ./cmd/deltafs
DELTAFS_BASE_BIN=$base go run ./bench/globbench 2>&1 | grep -v '^deltafs: \(un\)\?mounted' |
  tee "$out/glob-$(date -u +%Y%m%dT%H%M%SZ).txt"
# The per-file CPU of a first listing's warm-up, in process (footer read,
# verdict, the partition columns' splice), on the same table.
dir=${GLOBBENCH_DIR:-bench/out/glob}
[[ $dir = /* ]] || dir=$PWD/$dir
DELTAFS_GLOB_TABLE=$dir/table-${GLOBBENCH_FILES:-100000} \
  go test -run '^$' -bench BenchmarkWarmLocal -benchtime 10x ./serve/ | grep Benchmark |
  tee -a "$out/glob-warm-$(date -u +%Y%m%dT%H%M%SZ).txt"
