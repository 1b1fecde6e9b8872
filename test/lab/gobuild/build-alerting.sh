#!/usr/bin/env bash
# Builds the lab's alerting binaries from the Go module proxy into the lab cache, as build-helm.sh
# builds Helm: Alertmanager (the alert gate's and silences' real counterpart) from the module in
# alertmanager/, promtool (checks and unit-tests the shipped Prometheus rules) from the module in
# promtool/; each module pins its upstream and every dependency (go.sum). GOTOOLCHAIN local, no cgo,
# the shared GOCACHE. `npm test`'s set-up builds them (test/lab/prepare.sh) before the first test; the
# demo does not need them. Idempotent: with both binaries present it does nothing and prints nothing
# on stderr. Prints the binaries' directory as its last line; with --check it builds nothing and exits
# 3 when one is missing (what test/lab/alerting/binaries.ts uses: no test builds).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# The versions the go.mod files require; the build refuses a mismatch so they cannot drift apart.
ALERTMANAGER_VERSION=v0.35.0
PROMETHEUS_VERSION=v0.316.0
# shellcheck source=common.sh
. "$HERE/common.sh"
BIN="$CACHE/bin/alerting-am-$ALERTMANAGER_VERSION-prom-$PROMETHEUS_VERSION"
if [ -x "$BIN/alertmanager" ] && [ -x "$BIN/promtool" ]; then
  echo "$BIN"
  exit 0
fi
if [ "${1:-}" = --check ]; then
  echo "the lab's Alertmanager and promtool are not built in $CACHE: \`npm test\` builds them before its first test (or run \`bash test/lab/prepare.sh alerting\`)" >&2
  exit 3
fi
lab_build_lock alerting
# Another caller may have finished the build while this one waited for the lock.
if [ -x "$BIN/alertmanager" ] && [ -x "$BIN/promtool" ]; then
  echo "$BIN"
  exit 0
fi

lab_require_go build-alerting.sh 'Alertmanager and promtool'
lab_require_module build-alerting.sh "$HERE/alertmanager/go.mod" github.com/prometheus/alertmanager "$ALERTMANAGER_VERSION"
lab_require_module build-alerting.sh "$HERE/promtool/go.mod" github.com/prometheus/prometheus "$PROMETHEUS_VERSION"
lab_build_started Alertmanager/promtool

# Version stamping as Prometheus' promu does, so `--version` names what runs.
# Prometheus' Go module v0.316.0 is its release 3.16.0.
stamp() { echo "-s -w -X github.com/prometheus/common/version.Version=$1 -X github.com/prometheus/common/version.Branch=HEAD"; }
mkdir -p "$BIN.tmp"
if [ ! -x "$BIN/alertmanager" ]; then
  log "building alertmanager $ALERTMANAGER_VERSION"
  # The module on the proxy ships the UI's sources, not the built ui/app/dist it embeds (Alertmanager's
  # Makefile builds it with npm and Elm), and the module cache is read-only: build from a copy of this
  # helper module whose `replace` points at a copy of Alertmanager (verified against go.sum by the
  # download) with a placeholder page in app/dist. The lab uses only API v2.
  amdir=$(cd "$HERE/alertmanager" && go mod download -json github.com/prometheus/alertmanager | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$amdir" ] || { echo "build-alerting.sh: go mod download did not give Alertmanager's source directory" >&2; exit 1; }
  src="$BIN.tmp/src"
  rm -rf "$src" && mkdir -p "$src"
  cp "$HERE/alertmanager/go.mod" "$HERE/alertmanager/go.sum" "$HERE/alertmanager/tools.go" "$src/"
  cp -r "$amdir" "$src/alertmanager" && chmod -R u+w "$src/alertmanager"
  for ui in elm mantine; do
    mkdir -p "$src/alertmanager/ui/app/dist/$ui" && cp "$HERE/alertmanager/ui-placeholder.html" "$src/alertmanager/ui/app/dist/$ui/index.html"
  done
  (cd "$src" && go mod edit -replace github.com/prometheus/alertmanager=./alertmanager \
    && go build -trimpath -ldflags "$(stamp ${ALERTMANAGER_VERSION#v})" -o "$BIN.tmp/alertmanager" github.com/prometheus/alertmanager/cmd/alertmanager)
  rm -rf "$src"
fi
if [ ! -x "$BIN/promtool" ]; then
  log "building promtool (prometheus $PROMETHEUS_VERSION; a cold build takes several minutes on 2 cores)"
  (cd "$HERE/promtool" && go build -trimpath -ldflags "$(stamp 3.16.0)" -o "$BIN.tmp/promtool" github.com/prometheus/prometheus/cmd/promtool)
fi
mkdir -p "$BIN"
for b in alertmanager promtool; do
  if [ -x "$BIN.tmp/$b" ]; then mv "$BIN.tmp/$b" "$BIN/$b"; fi
done
rmdir "$BIN.tmp" 2>/dev/null || true
log "done: $BIN"
echo "$BIN"
