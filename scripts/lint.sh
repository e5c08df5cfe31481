#!/usr/bin/env bash
# Lints the module: gofmt -l, go vet, staticcheck (pinned; `make lint`
# installs it first), and builds it for linux/amd64, linux/arm64 and
# darwin/arm64. Runs every check even when one fails, so one run shows
# all findings; exits non-zero if any check failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pkgs=${PKGS:-./...}
failed=()

echo "== gofmt -l"
unformatted=$(find . -name '*.go' -not -path './.*' -not -path '*/node_modules/*' -print0 |
  xargs -0 -r gofmt -l)
if [[ -n $unformatted ]]; then
  printf '%s\n' "$unformatted"
  failed+=(gofmt)
fi

# Both builds are checked: the release one and the tests' one, which
# compiles writeback's crash points in (build tag deltafs_crashpoints).
for tags in "" deltafs_crashpoints; do
  echo "== go vet -tags '$tags' $pkgs"
  go vet -tags "$tags" $pkgs || failed+=("vet$tags")
  echo "== staticcheck -tags '$tags' $pkgs"
  staticcheck -tags "$tags" $pkgs || failed+=("staticcheck$tags")
done

# The platforms people install on keep building (macOS with macFUSE is
# untested; Linux-only benchmarks carry a linux build tag).
for target in linux/amd64 linux/arm64 darwin/arm64; do
  echo "== go build ./... for $target"
  GOOS=${target%/*} GOARCH=${target#*/} go build ./... || failed+=("build-$target")
done

if ((${#failed[@]})); then
  echo "lint: FAILED: ${failed[*]}"
  exit 1
fi
echo "lint: OK"
