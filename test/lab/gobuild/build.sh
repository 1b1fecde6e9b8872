#!/usr/bin/env bash
# Builds the lab's control-plane binaries (etcd, kube-apiserver, kube-controller-manager, kubectl)
# from the Go module proxy into a cache outside the repository, and fetches Gitea's OpenAPI
# description the same way. Idempotent: with everything present in the cache it does nothing and
# prints nothing on stderr. Prints the cache's bin directory as its last line.
#   build.sh --check   builds nothing: prints the directory when the cache is complete, else exits 3
#                      saying what builds it (what the tests' accessors use: no test builds).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
# shellcheck source=common.sh
. "$HERE/common.sh"
BIN="$CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"
GITEA_VERSION=$(tr -d '[:space:]' <"$HERE/../forge/gitea-version")
GITEA_DESC="$CACHE/gitea/$GITEA_VERSION/openapi3.json"
complete() {
  [ -s "$GITEA_DESC" ] || return 1
  local b
  for b in etcd kube-apiserver kube-controller-manager kubectl; do [ -x "$BIN/$b" ] || return 1; done
}
if [ "${1:-}" = --check ]; then
  complete && { echo "$BIN"; exit 0; }
  echo "the lab's Kubernetes binaries are not built in $CACHE: \`npm test\` builds them before its first test (or run \`npm run lab:build\`)" >&2
  exit 3
fi

lab_build_lock k8s

# Gitea's published OpenAPI 3 description, the contract of the lab forge's Gitea surface. It ships
# as a Go template inside the Gitea module; the version is pinned in test/lab/forge/gitea-version
# (read by the forge too). The substituted file lives in the cache, never in the repository.
if [ ! -s "$GITEA_DESC" ]; then
  command -v go >/dev/null || { echo "build.sh: Go is required to fetch Gitea's OpenAPI description (https://go.dev/dl)" >&2; exit 1; }
  echo "[lab build] fetching Gitea $GITEA_VERSION's OpenAPI description from the Go module proxy" >&2
  mkdir -p "$(dirname "$GITEA_DESC")"
  # Outside any module: -mod=readonly does not apply to `go mod download`.
  GOFLAGS= go mod download -json "code.gitea.io/gitea@$GITEA_VERSION" >"$GITEA_DESC.download.json"
  node - "$GITEA_DESC.download.json" "${GITEA_VERSION#v}" "$GITEA_DESC" <<'NODE'
const fs = require('node:fs');
const [info, version, out] = process.argv.slice(2);
const { Dir, Error: err } = JSON.parse(fs.readFileSync(info, 'utf8'));
if (err || !Dir) throw new Error(`go mod download: ${err ?? 'no Dir'}`);
const text = fs.readFileSync(`${Dir}/templates/swagger/v1_openapi3_json.tmpl`, 'utf8')
  .replaceAll('{{.SwaggerAppVer}}', version)
  .replaceAll('{{.SwaggerAppSubUrl}}', '');
const spec = JSON.parse(text);
if (!String(spec.openapi).startsWith('3.') || spec.servers?.[0]?.url !== '/api/v1') throw new Error('unexpected Gitea description (openapi or servers)');
fs.writeFileSync(`${out}.tmp`, text);
fs.renameSync(`${out}.tmp`, out);
NODE
  rm -f "$GITEA_DESC.download.json"
fi

need=()
for b in etcd kube-apiserver kube-controller-manager kubectl; do
  [ -x "$BIN/$b" ] || need+=("$b")
done
if [ ${#need[@]} -eq 0 ]; then
  echo "$BIN"
  exit 0
fi

lab_require_go build.sh 'the Kubernetes binaries'
mkdir -p "$BIN.tmp"
lab_build_started 'the Kubernetes binaries'

if [ ! -x "$BIN/etcd" ]; then
  log "building etcd $ETCD_VERSION"
  (cd "$HERE/etcd" && go build -trimpath -ldflags "-s -w" -o "$BIN.tmp/etcd" go.etcd.io/etcd/server/v3)
  mv "$BIN.tmp/etcd" "$BIN.tmp/etcd.done"
fi

# Without version stamping /version reports v0.0.0-master.
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
ldf="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldf+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=2026-01-01T00:00:00Z"
done
for b in kube-apiserver kube-controller-manager kubectl; do
  [ -x "$BIN/$b" ] && continue
  log "building $b $K8S_VERSION (a cold build takes 10-25 minutes on 2 cores)"
  (cd "$HERE/kube" && go build -trimpath -ldflags "$ldf" -o "$BIN.tmp/$b.done" "k8s.io/kubernetes/cmd/$b")
done

mkdir -p "$BIN"
for f in "$BIN.tmp"/*.done; do
  [ -e "$f" ] || continue
  b=$(basename "$f" .done)
  mv "$f" "$BIN/$b"
done
rmdir "$BIN.tmp" 2>/dev/null || true
log "done: $(ls "$BIN" | tr '\n' ' ')"
echo "$BIN"
