#!/usr/bin/env bash
# Builds Helm 3 from the Go module proxy into the lab cache, as build.sh builds the Kubernetes
# binaries: the small module in helm/ pins helm.sh/helm/v3 and every dependency (go.sum), GOTOOLCHAIN
# local, no cgo, the shared GOCACHE. `npm test`'s set-up builds it (test/lab/prepare.sh) before the
# first test; the demo does not need it. Idempotent: with the binary present it does nothing and
# prints nothing on stderr. Prints the binary's directory as its last line; with --check it builds
# nothing and exits 3 when the binary is missing (what test/lab/helm.ts uses: no test builds).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# The version `go.mod` requires; the build refuses a mismatch so the two cannot drift apart.
HELM_VERSION=v3.22.0
CACHE=${KANGAL_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kangal-lab}
BIN="$CACHE/bin/helm-$HELM_VERSION"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
export GOCACHE=${GOCACHE:-$CACHE/go-build}
# Test files run side by side (mocha --parallel): one build at a time; a second caller waits for
# the lock, then finds the build done.
if [ "${1:-}" = --check ]; then
  [ -x "$BIN/helm" ] && { echo "$BIN"; exit 0; }
  echo "the lab's Helm is not built in $CACHE: \`npm test\` builds it before its first test (or run \`bash test/lab/prepare.sh helm\`)" >&2
  exit 3
fi
mkdir -p "$CACHE"
exec 9>>"$CACHE/.build-helm.lock"
flock 9

if [ -x "$BIN/helm" ]; then
  echo "$BIN"
  exit 0
fi

command -v go >/dev/null || { echo "build-helm.sh: Go 1.26 is required to build Helm for the lab (https://go.dev/dl)" >&2; exit 1; }
grep -q "helm.sh/helm/v3 $HELM_VERSION" "$HERE/helm/go.mod" || { echo "build-helm.sh: helm/go.mod does not require helm.sh/helm/v3 $HELM_VERSION" >&2; exit 1; }
start=$(date +%s)
log() { echo "[lab build +$(( $(date +%s) - start ))s] $*" >&2; }
( while sleep 30; do log "still compiling Helm..."; done ) &
ticker=$!
trap 'kill $ticker 2>/dev/null || true' EXIT

# Version stamping as Helm's Makefile does: `helm version` and the Kubernetes version that
# `helm template` and `helm lint` assume (.Capabilities.KubeVersion) follow the client-go it is built with.
kminor=$(cd "$HERE/helm" && go list -m -f '{{.Version}}' k8s.io/client-go | sed -E 's/^v0\.([0-9]+)\..*/\1/')
ldf="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldf+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$kminor"
done
log "building helm $HELM_VERSION (a cold build takes a few minutes on 2 cores)"
mkdir -p "$BIN.tmp"
(cd "$HERE/helm" && go build -trimpath -ldflags "$ldf" -o "$BIN.tmp/helm" helm.sh/helm/v3/cmd/helm)
mkdir -p "$BIN"
mv "$BIN.tmp/helm" "$BIN/helm"
rmdir "$BIN.tmp" 2>/dev/null || true
log "done: $BIN/helm"
echo "$BIN"
