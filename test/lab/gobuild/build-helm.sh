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
# shellcheck source=common.sh
. "$HERE/common.sh"
BIN="$CACHE/bin/helm-$HELM_VERSION"
if [ "${1:-}" = --check ]; then
  [ -x "$BIN/helm" ] && { echo "$BIN"; exit 0; }
  echo "the lab's Helm is not built in $CACHE: \`npm test\` builds it before its first test (or run \`bash test/lab/prepare.sh helm\`)" >&2
  exit 3
fi
lab_build_lock helm

if [ -x "$BIN/helm" ]; then
  echo "$BIN"
  exit 0
fi

lab_require_go build-helm.sh Helm
lab_require_module build-helm.sh "$HERE/helm/go.mod" helm.sh/helm/v3 "$HELM_VERSION"
lab_build_started Helm

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
