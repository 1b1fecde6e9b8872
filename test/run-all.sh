#!/usr/bin/env bash
# `npm test`: the static checks (`npm run checks`) side by side with every mocha suite, three test
# files at a time; it fails when either does. The checks run beside the tests rather than before
# them: the lab tests leave about a fifth of the two cores idle (they mostly wait on simulated
# reboots and timers), which the checks' 2.5 minutes fill.
#
# Files are dispatched in the order given: the longest integration file (report.test.ts, about two
# minutes) first, so it does not run alone at the end; then the e2e suites, the other integration
# files and the unit tests.
set -uo pipefail
cd "$(dirname "$0")/.."
npm run -s checks &
checks=$!
mocha --parallel --jobs 3 'test/integration/report.test.ts' 'test/e2e/**/*.test.ts' 'test/integration/**/!(report).test.ts' 'test/unit/**/*.test.ts'
tests=$?
wait "$checks"
checked=$?
[ "$checked" -eq 0 ] || echo "npm test: typecheck or lint failed (exit $checked); see its output above" >&2
exit $(( tests || checked ))
