#!/usr/bin/env bash
# Resident memory of deltafs at its baseline: what a
# `deltafs ls` of a small local table and an idle mount of it hold, split
# into the process's own memory (RssAnon: heap, stacks) and the binary's
# pages the kernel has mapped (RssFile: shared with every other deltafs
# process and page cache the kernel can drop), next to the same figures
# for a build without the cloud SDKs (S3, GCS, Azure) made in the same
# run, the baseline: the difference is what linking the SDKs costs a
# local-only user. Needs /dev/fuse for the mount rows (skipped without).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work=$(mktemp -d)
trap 'fusermount3 -u "$work/mnt" 2>/dev/null || true; rm -rf "$work"' EXIT

go build -o "$work/deltafs" ./cmd/deltafs
# The baseline: the same source with the cloud openers left out
# (delta/blobstore/openers.go opening file:// and mem:// only).
git worktree add -q --detach "$work/nocloud" HEAD
trap 'fusermount3 -u "$work/mnt" 2>/dev/null || true; git worktree remove --force "$work/nocloud"; rm -rf "$work"' EXIT
cat >"$work/nocloud/delta/blobstore/openers.go" <<'EOF'
package blobstore

import (
	"context"
	"net/url"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/memblob"
)

const DefaultRequestTimeout = 30 * time.Second

func openBucket(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	return blob.OpenBucket(ctx, u.String())
}
EOF
(cd "$work/nocloud" && go build -o "$work/deltafs-nocloud" ./cmd/deltafs) || {
  echo "rss: the build without cloud SDKs failed (other files of delta/blobstore import them): no baseline" >&2
  exit 1
}

table=../shared/fixtures/delta/dat/basic_append/table
[[ -d $table/_delta_log ]] || { echo "rss: no small local table at $table (../shared beside the repo)" >&2; exit 1; }

kib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
status() { awk -v f="$2" '$1 == f":" { print $2 }' "/proc/$1/status"; }

printf '%-44s %-10s %12s %12s %12s\n' figure build peak/VmRSS RssAnon RssFile
for b in deltafs-nocloud deltafs; do
  peak=$( { /usr/bin/time -f '%M' "$work/$b" ls "$table" >/dev/null; } 2>&1 | tail -1)
  printf '%-44s %-10s %12s %12s %12s\n' "deltafs ls (peak)" "${b#deltafs-}" "$(kib "$peak")" - -
done
if [[ -e /dev/fuse ]]; then
  mkdir -p "$work/mnt"
  for b in deltafs-nocloud deltafs; do
    "$work/$b" mount --read-only --cache-dir "$work/cache-$b" "$table" "$work/mnt" >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do mountpoint -q "$work/mnt" && break; sleep 0.05; done
    ls -lR "$work/mnt" >/dev/null
    sleep 0.5
    printf '%-44s %-10s %12s %12s %12s\n' "idle mount after ls -lR" "${b#deltafs-}" \
      "$(kib "$(status $pid VmRSS)")" "$(kib "$(status $pid RssAnon)")" "$(kib "$(status $pid RssFile)")"
    fusermount3 -u "$work/mnt"
    wait $pid || true
  done
else
  echo "rss: no /dev/fuse: mount rows skipped"
fi
ls -l "$work/deltafs" "$work/deltafs-nocloud" | awk '{ printf "binary %s: %.1f MB\n", $NF, $5 / 1e6 }'
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
