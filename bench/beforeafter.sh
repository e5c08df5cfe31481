#!/usr/bin/env bash
# Before/after figures of a change, in one run ("measured before
# and after in one run"): the production-size figures of bench/scalebench
# taken alternately (the order switching each round: whichever side runs
# second in a round ran 8-20% slower in every round of a first version of
# this script) with deltafs built at BASE and at the working tree,
# over the same generated tables, and the log engine's Go benchmarks run
# alternately in both trees. Prints each figure's median before and after
# and their ratio; the raw reports stay under bench/out/.
#   BASE=<commit> (required)   ROUNDS=n (2) rounds, each side once per round
#   DELTAFS_SCALE_SIZE (full)  DELTAFS_BENCH_ONLY (versions,version,lastcp,cli,find)
#   GO_BENCH=regexp (BenchmarkReplay$|BenchmarkReadParquetActions|BenchmarkSegmentFarFromCheckpoint); "" skips them
# Take the figures on a quiet machine (uptime load < 1.5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ -z ${BASE:-} ]]; then # make bench runs every script: this one only on request
  echo "beforeafter: skipped (set BASE=<commit> to compare the working tree against it)"
  exit 0
fi
base=$BASE
rounds=${ROUNDS:-2}
export DELTAFS_SCALE_SIZE=${DELTAFS_SCALE_SIZE:-full}
export DELTAFS_BENCH_ONLY=${DELTAFS_BENCH_ONLY-versions,version,lastcp,cli,find}
gobench=${GO_BENCH-'BenchmarkReplay$|BenchmarkReadParquetActions|BenchmarkSegmentFarFromCheckpoint'}
out=${BENCH_OUT:-bench/out}/beforeafter-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out/before" "$out/after"
out=$(cd "$out" && pwd)

wt=$(mktemp -d /tmp/deltafs-base.XXXXXX)
git worktree add -q --detach "$wt" "$base"
trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || true' EXIT
echo "beforeafter: before = $(git -C "$wt" log -1 --format='%h %s' | cut -c1-72)"
echo "beforeafter: after  = $(git log -1 --format='%h' HEAD)$(git diff --quiet HEAD || echo ' + uncommitted changes')"
(cd "$wt" && go build -o "$out/before/deltafs" ./cmd/deltafs)
go build -o "$out/after/deltafs" ./cmd/deltafs
go build -o "$out/scalebench" ./bench/scalebench # one harness for both sides

# The Go benchmarks of whichever packages hold them on each side (the
# checkpoint codec moved to delta/checkpoint).
gopkgs() { (cd "$1" && go list ./delta/... | grep -v /blobstore); }
for r in $(seq 1 "$rounds"); do
  order="before after"; (( r % 2 == 0 )) && order="after before" # neither side always runs first
  for side in $order; do
    dir=$PWD; [[ $side == before ]] && dir=$wt
    echo "beforeafter: round $r, $side (load $(cut -d' ' -f1-3 /proc/loadavg))"
    if [[ -n $DELTAFS_BENCH_ONLY ]]; then
      DELTAFS_BIN="$out/$side/deltafs" "$out/scalebench" > "$out/$side/scale-$r.txt"
    fi
    if [[ -n $gobench ]]; then
      (cd "$dir" && go test -run '^$' -bench "$gobench" -benchmem -count 1 $(gopkgs "$dir")) > "$out/$side/go-$r.txt"
    fi
  done
done

# A report row is "   figure  config  median  ratio  target  verdict  note",
# columns two or more spaces apart; a Go benchmark line is "name N v unit
# v unit ...". Values are taken to a number in one unit for the ratio.
awk -v rounds="$rounds" '
function num(s,   n, u) {
  if (match(s, /^[0-9.]+(ns|µs|us|ms|s|m)?/) == 0) return ""
  n = substr(s, 1, RLENGTH) + 0; u = substr(s, 1, RLENGTH); sub(/^[0-9.]+/, "", u)
  if (u == "ns") return n / 1e6; if (u == "µs" || u == "us") return n / 1e3
  if (u == "s") return n * 1e3; if (u == "m") return n * 6e4
  return n
}
function median(s,   n, a, i, j, t) {
  n = split(s, a, " ")
  for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
  return a[int((n + 1) / 2)]
}
FNR == 1 { side = (FILENAME ~ /\/before\//) ? "before" : "after"; go = (FILENAME ~ /\/go-/) }
!go && /^   / && !/^   figure/ && !/^   ratio:/ {
  split(substr($0, 4), c, /  +/)
  key = c[1] " | " c[2]; v = num(c[3])
  if (v == "") next
  if (!(key in seen)) { seen[key] = 1; order[++n] = key }
  vals[key, side] = vals[key, side] " " v
}
go && /^Benchmark/ {
  name = $1; sub(/-[0-9]+$/, "", name)
  for (i = 3; i < NF; i += 2) {
    if ($(i+1) != "ns/op" && $(i+1) != "peak-heap-MiB" && $(i+1) != "allocs/op") continue
    key = name " | " $(i+1); v = ($(i+1) == "ns/op") ? $i / 1e6 : $i
    if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    vals[key, side] = vals[key, side] " " v
  }
}
END {
  printf "\n== before/after (median of %d rounds each; times in ms, ns/op shown as ms)\n", rounds
  printf "   %-78s %12s %12s %8s\n", "figure | config (or benchmark | unit)", "before", "after", "after/before"
  for (i = 1; i <= n; i++) {
    k = order[i]; b = median(vals[k, "before"]); a = median(vals[k, "after"])
    printf "   %-78s %12.4g %12.4g %8s\n", substr(k, 1, 78), b, a, (b > 0 && a != "") ? sprintf("%.2fx", a / b) : ""
  }
}' "$out"/before/*.txt "$out"/after/*.txt | tee "$out/summary.txt"
echo "beforeafter: raw reports under $out; load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
