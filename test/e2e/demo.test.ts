// `npm run demo` end to end, as CI runs it: stdout is not a TTY (plain lines), sub-second
// simulator timings. The demo itself is the system under test: its exit code, the summary table
// it prints and the report line; the rollout it shows was made by the real controller process.
// Here: the demo refuses a scenario it does not have before any lab starts. Every scenario, the
// default story of the Quick start among them, runs in `npm run demo:check` (test/demo/check/),
// each a whole rollout of the demo's 11-node fleet; the rollout of the same custom-groups example
// on 11 nodes is also test/e2e/patchplan-rollout.test.ts.
import assert from 'node:assert/strict';
import { runDemo } from '../demo/run-demo.js';

describe('npm run demo (non-TTY, test timings)', function () {
  this.timeout(600_000);

  it('an unknown --scenario is refused before any lab starts, naming every scenario (promotion among them)', async function () {
    const run = await runDemo(['--scenario', 'nope']);
    assert.notEqual(run.code, 0);
    assert.equal(run.stdout, '', 'nothing started, nothing printed');
    assert.match(
      run.stderr,
      /argument 'nope' is invalid\. Allowed choices are custom-groups, failure-pause, maintenance-window, kubernetes-upgrade, auto-update, promotion\./,
    );
  });
});
