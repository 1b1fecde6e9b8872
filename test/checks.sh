#!/usr/bin/env bash
# `npm run checks`: the static checks side by side, each with its own cache under
# node_modules/.cache/kangal-patch/ (a clean clone, as CI's, checks everything). Fails when any fails:
#   typecheck      tsc, incremental
#   lint           typescript-eslint with type-aware rules; complexity 12 and 4 parameters per function
#   format:check   Prettier at width 120 (`npm run format` rewrites)
#   unused         knip: no export, file or dependency nothing uses
#   architecture   the house rules (test/unit/architecture.test.ts): no import cycle, no arrow up a layer,
#                  a pure core, each adapter library in its own room
set -uo pipefail
cd "$(dirname "$0")/.."
declare -A pids=()
for check in typecheck lint format:check unused architecture; do
  npm run -s "$check" &
  pids[$check]=$!
done
failed=()
for check in "${!pids[@]}"; do wait "${pids[$check]}" || failed+=("$check"); done
[ ${#failed[@]} -eq 0 ] || { echo "npm run checks: ${failed[*]} failed (see above)" >&2; exit 1; }
