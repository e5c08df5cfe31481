#!/usr/bin/env bash
# Prints the version make dist stamps into deltafs and its .deb, in a form
# dpkg orders correctly:
#   at a tag v1.2.0                  -> 1.2.0
#   3 commits after v1.2.0           -> 1.2.0+git3.g1a2b3c4
#   no tag yet                       -> 0.0.0~git20261201112532.g1a2b3c4 (commit time)
# with ".dirty" appended when the tree has uncommitted changes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hash=$(git rev-parse --short=12 HEAD)
dirty=
git diff --quiet HEAD -- 2>/dev/null || dirty=.dirty
if tag=$(git describe --tags --abbrev=0 --match 'v[0-9]*' 2>/dev/null); then
  n=$(git rev-list --count "$tag..HEAD")
  if [[ $n == 0 ]]; then
    echo "${tag#v}${dirty:+~dirty}"
  else
    echo "${tag#v}+git$n.g$hash$dirty"
  fi
else
  echo "0.0.0~git$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S).g$hash$dirty"
fi
