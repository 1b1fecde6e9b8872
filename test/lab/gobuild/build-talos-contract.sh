#!/usr/bin/env bash
# Builds the Talos contract test's client (talos-contract/: a small Go program on Siderolabs' own
# client, github.com/siderolabs/talos/pkg/machinery, that drives the lab's Talos simulator) into the
# lab cache, as build-helm.sh builds Helm: the module pins machinery and every dependency (go.sum),
# GOTOOLCHAIN local, no cgo, the shared GOCACHE. The binary's directory is named by a digest of the
# module's sources, so an edited case is rebuilt and never mistaken for the old binary. `npm test`'s
# set-up builds it (test/lab/prepare.sh) before the first test; the demo does not need it.
# Idempotent: with the binary present it does nothing and prints nothing on stderr. Prints the
# binary's directory as its last line; with --check it builds nothing and exits 3 when the binary is
# missing (what test/lab/talos-contract.ts uses: no test builds).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC="$HERE/talos-contract"
# The version `go.mod` requires; the build refuses a mismatch so the two cannot drift apart.
MACHINERY_VERSION=v1.13.9
# shellcheck source=common.sh
. "$HERE/common.sh"
DIGEST=$(cd "$SRC" && LC_ALL=C sha256sum go.mod go.sum ./*.go | sha256sum | cut -c1-16)
BIN="$CACHE/bin/talos-contract-$DIGEST"
if [ "${1:-}" = --check ]; then
  [ -x "$BIN/talos-contract" ] && { echo "$BIN"; exit 0; }
  echo "the lab's Talos contract client is not built in $CACHE for these sources: \`npm test\` builds it before its first test (or run \`bash test/lab/prepare.sh contract\`)" >&2
  exit 3
fi
lab_build_lock talos-contract

if [ -x "$BIN/talos-contract" ]; then
  echo "$BIN"
  exit 0
fi

lab_require_go build-talos-contract.sh 'the Talos contract client'
lab_require_module build-talos-contract.sh "$SRC/go.mod" github.com/siderolabs/talos/pkg/machinery "$MACHINERY_VERSION"
lab_build_started 'the Talos contract client'

log "building talos-contract on machinery $MACHINERY_VERSION (a cold build takes a few minutes on 2 cores)"
mkdir -p "$BIN.tmp"
(cd "$SRC" && go build -trimpath -ldflags "-s -w" -o "$BIN.tmp/talos-contract" .)
mkdir -p "$BIN"
mv "$BIN.tmp/talos-contract" "$BIN/talos-contract"
rmdir "$BIN.tmp" 2>/dev/null || true
log "done: $BIN/talos-contract"
echo "$BIN"
