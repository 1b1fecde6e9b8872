#!/usr/bin/env bash
# Builds every lab part a run needs, before it starts, into the lab cache ($KANGAL_LAB_CACHE, default
# ~/.cache/kangal-lab): `npm test`'s pretest and CI run it with all parts, the benches, chaos and
# `npm run lab` with the ones they use. No test builds anything: the tests' accessors only find what
# this built (each script's --check) and fail at once, naming this script, when a part is missing.
#
#   prepare.sh [kube] [helm] [alerting] [image] [contract]     (no argument: all five)
#
# Warm, it checks each part in well under a second and prints one line. Cold, it says what it builds
# and how long that takes on a 2-core machine, passes each build's progress on (stderr), and stops at
# the first failing build with that build's own error and a non-zero exit.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${KANGAL_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kangal-lab}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(kube helm alerting image contract)

# part → the command that builds it (with --check appended, it only looks), what it is and its cold
# time on a 2-core machine (the Go builds share one GOCACHE, so the later ones reuse the first's
# compiled dependencies).
declare -A build=(
  [kube]="bash $HERE/gobuild/build.sh"
  [helm]="bash $HERE/gobuild/build-helm.sh"
  [alerting]="bash $HERE/gobuild/build-alerting.sh"
  [image]="bash $HERE/image/build.sh lab"
  [contract]="bash $HERE/gobuild/build-talos-contract.sh"
)
declare -A what=(
  [kube]="etcd, kube-apiserver, kube-controller-manager and kubectl (about 15-25 min)"
  [helm]="Helm (about 3-5 min)"
  [alerting]="Alertmanager and promtool (about 8-12 min)"
  [image]="the controller's container image and its Debian base (about 2-3 min; rebuilt in seconds when the sources change)"
  [contract]="the Talos contract client on Siderolabs' Go client (about 2-3 min; rebuilt in seconds when its sources change)"
)
declare -A minutes=([kube]=20 [helm]=4 [alerting]=10 [image]=3 [contract]=3)

missing=()
for p in "${parts[@]}"; do
  [ -n "${build[$p]:-}" ] || { echo "prepare.sh: unknown lab part '$p' (kube, helm, alerting, image, contract)" >&2; exit 2; }
  # shellcheck disable=SC2086 # the commands are word lists built above
  ${build[$p]} --check >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "[lab] every part is built (${parts[*]}) in $CACHE" >&2
  exit 0
fi

total=0
for p in "${missing[@]}"; do total=$(( total + ${minutes[$p]} )); done
echo "[lab] building what $CACHE lacks, once (about $total min on 2 cores; later runs reuse it):" >&2
for p in "${missing[@]}"; do echo "[lab]   - ${what[$p]}" >&2; done
start=$(date +%s)
for p in "${missing[@]}"; do
  step=$(date +%s)
  echo "[lab] building $p: ${what[$p]}" >&2
  # shellcheck disable=SC2086
  if ! ${build[$p]} >/dev/null; then
    echo "[lab] building $p failed (its error is above); nothing was run" >&2
    exit 1
  fi
  echo "[lab] $p built in $(( $(date +%s) - step )) s" >&2
done
echo "[lab] ready in $(( ($(date +%s) - start + 30) / 60 )) min" >&2
