#!/usr/bin/env bash
# Log replay figures of the Delta log engine issue, as ratios to the
# checkpoint decode floor measured in the same run: reads the delta
# package's benchmark lines from $BENCH_OUT/go-latest.txt (written by
# scripts/bench.sh just before), or runs them when that file lacks them.
#   REPLAY_COUNT=n (default 3): -count when this script runs them itself.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${BENCH_OUT:-bench/out}
mkdir -p "$out"
src=$out/go-latest.txt
want='^Benchmark(Replay|ReplayFloor|ReadParquetActions|CheckpointDecodeFloor)\b'
if ! [[ -f $src ]] || ! grep -Eq '^BenchmarkReplay/latest' "$src" || ! grep -Eq '^BenchmarkReplayFloor' "$src"; then
  src=$out/replay-go-$(date -u +%Y%m%dT%H%M%SZ).txt
  go test -run '^$' -bench 'BenchmarkReplay|BenchmarkReadParquetActions|BenchmarkCheckpointDecodeFloor' \
    -benchmem -count "${REPLAY_COUNT:-3}" ./delta/ ./delta/checkpoint/ | tee "$src" | grep -E '^(Benchmark|ok|FAIL)'
fi

# Median of every metric per benchmark, then the ratios and targets.
grep -E "$want" "$src" | awk '
function median(key,   n, i, j, t, a) {
  n = split(vals[key], a, " ")
  for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
  return n ? a[int((n + 1) / 2)] : 0
}
{
  name = $1; sub(/-[0-9]+$/, "", name); runs[name]++
  for (i = 3; i < NF; i += 2) vals[name SUBSEP $(i+1)] = vals[name SUBSEP $(i+1)] " " $i
}
function line(label, name, base, target,   ns, cpu, heap, r, rc, verdict) {
  if (!((name SUBSEP "ns/op") in vals)) { printf "  %-46s (not run)\n", label; return }
  ns = median(name SUBSEP "ns/op"); cpu = median(name SUBSEP "cpu-ns/op"); heap = median(name SUBSEP "peak-heap-MiB")
  r = base ? ns / median(base SUBSEP "ns/op") : 0; rc = base ? cpu / median(base SUBSEP "cpu-ns/op") : 0
  verdict = ""
  if (target != "") verdict = (r <= target + 0) ? "met" : "NOT MET"
  printf "  %-46s %9.1f ms %9.1f ms  %6.1f MiB  %s  %s  %-8s %s\n", label, ns / 1e6, cpu / 1e6, heap,
    base ? sprintf("%5.2fx", r) : "     ", base ? sprintf("%5.2fx", rc) : "     ", target != "" ? "<= " target "x" : "", verdict
}
END {
  floor = "BenchmarkReplayFloor"
  printf "\n== log replay (median of %d runs; wall and CPU time per snapshot, peak heap)\n", runs["BenchmarkReplay/latest-100k-files-from-checkpoint"]
  printf "  %-46s %12s %12s  %10s  %6s  %6s  %-8s %s\n", "benchmark", "wall", "cpu", "peak heap", "wall/f", "cpu/f", "target", "verdict"
  line("checkpoint decode floor (parquet-go rows)", floor, "", "")
  line("latest snapshot, 100k files, from checkpoint", "BenchmarkReplay/latest-100k-files-from-checkpoint", floor, "1.5")
  line("@v5000 snapshot, 50k files, from checkpoint", "BenchmarkReplay/v5000-from-checkpoint", floor, "")
  line("latest, 2,000 commits, no checkpoint", "BenchmarkReplay/latest-2000-commits-no-checkpoint", floor, "")
  f2 = "BenchmarkCheckpointDecodeFloor"
  line("decode floor, 100k-add synthetic checkpoint", f2, "", "")
  line("ReadParquetActions: decode only", "BenchmarkReadParquetActions/decode", f2, "")
  line("ReadParquetActions: keep 100k adds in a map", "BenchmarkReadParquetActions/snapshot", f2, "")
  heap = median("BenchmarkReplay/latest-100k-files-from-checkpoint" SUBSEP "peak-heap-MiB")
  printf "  peak heap of the latest 100k-file snapshot: %.1f MiB, target <= 100 MiB: %s\n", heap, heap <= 100 ? "met" : "NOT MET"
  printf "  (x/f: ratio to the floor above it; the issue asks latest snapshot <= 1.5x the floor)\n"
}'
