#!/usr/bin/env bash
# Mount benchmarks of the mount issue: sequential reads (native, deltafs with
# passthrough and on the userspace path, go-fuse's loopback), first reads of
# DV'd files, `ls -l` of a 10,000-file snapshot, open+read+close of a small
# file; every figure a ratio to a baseline measured in the same run.
# Needs root and /dev/fuse (skips otherwise). Sizes: DELTAFS_BENCH_LARGE=1
# for the issue's (1 GiB sequential, 256 MiB DV'd file); the other knobs are
# listed in bench/mountbench/main.go.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p bin
go build -o bin/mountbench ./bench/mountbench
go build -o bin/deltafs ./cmd/deltafs
export DELTAFS_BENCH_DELTAFS=${DELTAFS_BENCH_DELTAFS:-$PWD/bin/deltafs}
exec bin/mountbench
