# Sourced by each build script of the lab (build.sh, build-helm.sh, build-alerting.sh,
# build-talos-contract.sh): what every lab build shares. The cache ($KANGAL_LAB_CACHE, default
# ~/.cache/kangal-lab); the Go settings (the machine's own Go, no cgo, modules only as each go.sum pins
# them, one GOCACHE, so a later build reuses the first's compiled dependencies); one build of a part at
# a time; and a heartbeat on stderr, as a cold build is silent for minutes otherwise.
CACHE=${KANGAL_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kangal-lab}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
export GOCACHE=${GOCACHE:-$CACHE/go-build}

# lab_build_lock NAME: test files run side by side (mocha --parallel), so a second caller waits here
# for the first's build of this part, holding the lock until the script ends; it then looks again
# whether the build is done.
lab_build_lock() {
  mkdir -p "$CACHE"
  exec 9>>"$CACHE/.build-$1.lock"
  flock 9
}

# lab_require_go SCRIPT WHAT: stops with a clear message when Go is missing.
lab_require_go() {
  command -v go >/dev/null || { echo "$1: Go 1.26 is required to build $2 for the lab (https://go.dev/dl)" >&2; exit 1; }
}

# lab_require_module SCRIPT GO_MOD MODULE VERSION: the version a helper module's go.mod requires must
# be the one its build script names, so the two cannot drift apart.
lab_require_module() {
  grep -q "$3 $4" "$2" || { echo "$1: $2 does not require $3 $4" >&2; exit 1; }
}

# log MESSAGE: one stderr line with the seconds since lab_build_started.
log() { echo "[lab build +$(( $(date +%s) - ${start:-$(date +%s)} ))s] $*" >&2; }

# lab_build_started WHAT: starts the clock of log and a heartbeat every 30 s until the script ends.
lab_build_started() {
  start=$(date +%s)
  ( while sleep 30; do log "still compiling $1..."; done ) &
  ticker=$!
  trap 'kill $ticker 2>/dev/null || true' EXIT
}
