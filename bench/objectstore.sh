#!/usr/bin/env bash
# Object-storage benchmarks of the object-storage issue, against a local
# versitygw started by the program: sequential read of an S3 object through
# the mount vs one ranged GET with gocloud's S3 reader (target >= 0.8x), time
# to first byte, `find` over a 10,000-file snapshot of an S3 table; every
# figure a ratio to a baseline measured in the same run. Needs /dev/fuse and
# versitygw (make tools-servers), else it skips. DELTAFS_BENCH_LARGE=1 for the
# issue's 256 MiB object (default 64 MiB); other knobs in
# bench/objstorebench/main.go.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p bin
go build -o bin/objstorebench ./bench/objstorebench
exec bin/objstorebench
