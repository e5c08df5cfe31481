#!/usr/bin/env bash
# Installs the pinned tools deltafs tests and lint need, into the repo's tools
# dir (.tools/: Go binaries in .tools/bin, npm packages under .tools/node).
# Idempotent: a tool already installed at its pinned version is skipped.
#
# Usage: scripts/install-tools.sh TOOL|GROUP...
#   tools:  cc fuse3 rsync staticcheck gotestsum nfpm duckdb polars versitygw fake-gcs-server azurite
#   groups: dev     = staticcheck gotestsum nfpm duckdb polars (make tools)
#           servers = versitygw fake-gcs-server azurite (make tools-servers)
#           system  = cc fuse3 rsync (apt packages; needs root)
#           ci      = system + dev
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools=${DELTAFS_TOOLS:-$root/.tools}
gobin=$tools/bin
nodeprefix=$tools/node

# Pinned versions: change them here only.
STATICCHECK_VERSION=v0.8.2
GOTESTSUM_VERSION=v1.13.0
NFPM_VERSION=v2.48.0         # builds the .deb (make dist)
VERSITYGW_VERSION=v1.8.0
FAKE_GCS_VERSION=v1.56.1
AZURITE_VERSION=3.35.0       # 3.37 needs Node 22
DUCKDB_NODE_VERSION=1.5.6-r.1
POLARS_NODE_VERSION=0.25.2   # newer releases' platform packages are not all served

log() { printf 'install-tools: %s\n' "$*" >&2; }

# go_tool BIN PACKAGE MODULE VERSION: go install PACKAGE@VERSION into .tools/bin
# unless BIN there was already built from MODULE at VERSION.
go_tool() {
  local bin=$gobin/$1 pkg=$2 mod=$3 ver=$4
  if [[ -x $bin ]] && go version -m "$bin" 2>/dev/null |
    awk '$1 == "mod" { print $2, $3 }' | grep -qx "$mod $ver"; then
    log "$1 $ver already installed"
    return
  fi
  log "installing $1 $ver (go install $pkg@$ver)"
  mkdir -p "$gobin"
  GOBIN=$gobin go install "$pkg@$ver"
}

# npm_pkg PACKAGE VERSION: npm install PACKAGE@VERSION under .tools/node
# unless that exact version is already there.
npm_pkg() {
  local pkg=$1 ver=$2 pj=$nodeprefix/node_modules/$1/package.json
  if [[ -f $pj ]] && [[ $(node -p 'require(process.argv[1]).version' "$pj") == "$ver" ]]; then
    log "$pkg $ver already installed"
    return
  fi
  log "installing $pkg $ver (npm)"
  mkdir -p "$nodeprefix"
  npm install --prefix "$nodeprefix" --no-audit --no-fund --save-exact \
    --loglevel=error "$pkg@$ver" </dev/null
}

apt_updated=
# apt_install PACKAGE...: needs root; runs apt-get update once per invocation.
apt_install() {
  if [[ $(id -u) != 0 ]]; then
    log "need root to install $*: run 'sudo apt-get install -y $*'"
    return 1
  fi
  if [[ -z $apt_updated ]]; then
    apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends "$@" </dev/null
}

# have_cmd NAME LABEL: true (and says so) when NAME is on PATH.
have_cmd() {
  command -v "$1" >/dev/null 2>&1 && log "$2 present ($(command -v "$1"))"
}

install_one() {
  case $1 in
    cc) have_cmd cc "C compiler (needed by go test -race)" || apt_install gcc libc6-dev ;;
    fuse3) have_cmd fusermount3 fuse3 || apt_install fuse3 ;;
    rsync) have_cmd rsync "rsync (the inbox's rename tests)" || apt_install rsync ;;
    staticcheck) go_tool staticcheck honnef.co/go/tools/cmd/staticcheck honnef.co/go/tools "$STATICCHECK_VERSION" ;;
    gotestsum) go_tool gotestsum gotest.tools/gotestsum gotest.tools/gotestsum "$GOTESTSUM_VERSION" ;;
    versitygw) go_tool versitygw github.com/versity/versitygw/cmd/versitygw github.com/versity/versitygw "$VERSITYGW_VERSION" ;;
    fake-gcs-server) go_tool fake-gcs-server github.com/fsouza/fake-gcs-server github.com/fsouza/fake-gcs-server "$FAKE_GCS_VERSION" ;;
    nfpm) go_tool nfpm github.com/goreleaser/nfpm/v2/cmd/nfpm github.com/goreleaser/nfpm/v2 "$NFPM_VERSION" ;;
    duckdb) npm_pkg @duckdb/node-api "$DUCKDB_NODE_VERSION" ;;
    polars)
      npm_pkg nodejs-polars "$POLARS_NODE_VERSION"
      case $(uname -m) in
        x86_64) npm_pkg nodejs-polars-linux-x64-gnu "$POLARS_NODE_VERSION" ;;
        aarch64) npm_pkg nodejs-polars-linux-arm64-gnu "$POLARS_NODE_VERSION" ;;
        *) log "polars: no nodejs-polars build for $(uname -m)" ;;
      esac ;;
    azurite) npm_pkg azurite "$AZURITE_VERSION" ;;
    dev) install_one staticcheck; install_one gotestsum; install_one nfpm; install_one duckdb; install_one polars ;;
    servers) install_one versitygw; install_one fake-gcs-server; install_one azurite ;;
    system) install_one cc; install_one fuse3; install_one rsync ;;
    ci) install_one system; install_one dev ;;
    *) log "unknown tool '$1' (see the usage at the top of $0)"; return 2 ;;
  esac
}

if [[ $# -eq 0 ]]; then
  awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" >&2
  exit 2
fi
for t in "$@"; do
  install_one "$t"
done
