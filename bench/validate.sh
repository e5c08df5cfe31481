#!/usr/bin/env bash
# The validation of an appended file (every page decoded within
# the validation budget) against DuckDB reading all the columns of the
# same file, measured in the same run (bench/validatebench).
#   VALIDATEBENCH_MIB=n (default 256): the file's size.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${BENCH_OUT:-bench/out}
mkdir -p "$out"
go run ./bench/validatebench | tee "$out/validate-$(date -u +%Y%m%dT%H%M%SZ).txt"
