#!/usr/bin/env bash
# The .deb as a user gets it (make deb-smoke; CI runs it after make test):
# build it for this machine's architecture (unless DEB=path is given),
# dpkg -i it, check what it installs, mount a fixture table with
# `mount -t fuse.deltafs` as an /etc/fstab line would, read a file, unmount
# and dpkg --purge the package. Needs root and /dev/fuse; fails (exit 1) at
# the first thing that is wrong.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
fail() { echo "deb-smoke: FAIL: $*" >&2; exit 1; }
say() { echo "deb-smoke: $*"; }

[[ $(id -u) == 0 ]] || fail "needs root (dpkg -i, mount)"
[[ -c /dev/fuse ]] || fail "no /dev/fuse"
fixtures=${DELTAFS_FIXTURES:-$root/../shared/fixtures/delta}
table=$fixtures/dat/basic_append/table
[[ -d $table/_delta_log ]] || fail "fixture $table not found (set DELTAFS_FIXTURES)"
if dpkg-query -W deltafs >/dev/null 2>&1; then
  fail "a deltafs package is already installed; this script installs and purges its own"
fi

arch=$(dpkg --print-architecture)
deb=${DEB:-}
if [[ -z $deb ]]; then
  DIST_ARCHES=$arch bash scripts/dist.sh >/dev/null
  deb=$(ls dist/deltafs_*_"$arch".deb)
fi
work=$(mktemp -d /tmp/deltafs-deb-smoke.XXXXXX)
mnt=$work/mnt
cleanup() {
  if grep -q " $mnt fuse.deltafs " /proc/mounts; then umount -l "$mnt" || true; fi
  if dpkg-query -W deltafs >/dev/null 2>&1; then dpkg --purge deltafs >/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

say "dpkg -i $deb"
dpkg -i "$deb" >/dev/null
for f in /usr/bin/deltafs /sbin/mount.fuse.deltafs /lib/systemd/system/deltafs@.service /usr/share/man/man1/deltafs.1.gz; do
  [[ -e $f ]] || fail "$f not installed"
done
[[ $(readlink -f /sbin/mount.fuse.deltafs) == $(readlink -f /usr/bin/deltafs) ]] || fail "/sbin/mount.fuse.deltafs does not point at /usr/bin/deltafs"
want=$(dpkg-deb -f "$deb" Version)
got=$(deltafs --version | head -1)
[[ $got == "deltafs $want" ]] || fail "deltafs --version says '$got', the package is $want"
zcat /usr/share/man/man1/deltafs.1.gz | grep -q '^\.SS "deltafs mount ' || fail "man page has no mount section"
if command -v systemd-analyze >/dev/null; then
  # ExecStart names deltafs without a directory: verify finds it on systemd's PATH.
  out=$(systemd-analyze verify /lib/systemd/system/deltafs@.service 2>&1) || fail "systemd-analyze verify: $out"
fi

mkdir -p "$mnt"
say "mount -t fuse.deltafs basic=$table $mnt -o ro,..."
# The helper prints nothing on stdout (mount(8) helpers stay quiet) and
# says on stderr which pid it left serving in the background.
out=$(mount -t fuse.deltafs "basic=$table" "$mnt" -o "ro,nodev,nosuid,_netdev,cache_dir=$work/cache,log_file=$work/log" 2>"$work/mount.err") ||
  fail "mount -t fuse.deltafs failed: $(cat "$work/mount.err" "$work/log" 2>/dev/null)"
[[ -z $out ]] || fail "the helper printed '$out' on stdout"
pid=$(sed -n 's/.*mounted in the background (pid \([0-9]*\)).*/\1/p' "$work/mount.err")
[[ $pid =~ ^[0-9]+$ ]] || fail "the helper did not say the pid of the mount: $(cat "$work/mount.err")"
grep -q " $mnt fuse.deltafs " /proc/mounts || fail "$mnt is not a fuse.deltafs mount after mount(8) returned"
n=0
for f in "$mnt"/basic/@latest/*.parquet; do
  [[ -e $f ]] || fail "no Parquet file under $mnt/basic/@latest"
  cmp -s "$f" "$table/$(basename "$f")" || fail "$f differs from the table's file"
  n=$((n + 1))
done
say "read $n files through the mount"
umount "$mnt"
for _ in $(seq 100); do # the server exits once the kernel lets go
  [[ -d /proc/$pid ]] || break
  sleep 0.1
done
[[ ! -d /proc/$pid ]] || fail "deltafs (pid $pid) still running 10 s after umount"
! grep -q " $mnt " /proc/mounts || fail "$mnt still mounted after umount"

dpkg --purge deltafs >/dev/null
[[ ! -e /usr/bin/deltafs && ! -L /sbin/mount.fuse.deltafs ]] || fail "dpkg --purge left files behind"
say "OK ($want)"
