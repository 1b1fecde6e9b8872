// `npm run demo` end to end, as CI runs it: stdout is not a TTY (plain lines), sub-second
// simulator timings. The demo itself is the system under test: its exit code, the summary table
// it prints and the report line; the rollout it shows was made by the real controller process.
// The default story runs here; every other scenario runs in `npm run demo:check`
// (test/demo/check/), each being a whole rollout of the demo's 11-node fleet.
import assert from 'node:assert/strict';
import { demoContext, ROLLED, runDemo, summaryRow } from '../demo/run-demo.js';

describe('npm run demo (non-TTY, test timings)', function () {
  this.timeout(600_000);

  it('an unknown --scenario is refused before any lab starts, naming every scenario (promotion among them)', async function () {
    const run = await runDemo(['--scenario', 'nope']);
    assert.notEqual(run.code, 0);
    assert.equal(run.stdout, '', 'nothing started, nothing printed');
    assert.match(run.stderr, /argument 'nope' is invalid\. Allowed choices are custom-groups, failure-pause, maintenance-window, kubernetes-upgrade, auto-update, promotion\./);
  });

  it('custom-groups: pushes the example, the controller rolls it out, the summary shows every node moved, exit 0', async function () {
    const run = await runDemo([]);
    const context = demoContext(run);
    assert.equal(run.code, 0, context);
    assert.ok(!run.stdout.includes('\u001b['), 'no ANSI redraws when stdout is not a TTY');
    assert.match(run.stdout, /\$ git add plans\/custom-groups\.yaml && git commit .* && git push/, 'pushed with git, as a user would');
    assert.match(run.stdout, /plan custom-groups: Completed 11\/11 nodes/);
    for (const node of ROLLED) {
      const row = summaryRow(run.stdout, node);
      assert.ok(row, `a summary row for ${node}\n${context}`);
      assert.equal(row[2], 'v1.12.4 → v1.13.2', `${node} Talos`);
      assert.equal(row[3], 'v1.35.2 → v1.36.3', `${node} Kubernetes`);
      assert.match(row[4] ?? '', /^\d+(m\d\ds|s)$/, `${node} time cordoned`);
      assert.equal(row[6], 'Completed', `${node} result`);
    }
    assert.equal(summaryRow(run.stdout, 'worker-9'), undefined, 'the staging node is not in the plan');
    assert.match(run.stdout, /not selected by the plan \(untouched\): worker-9/);
    const report = /^report PR: (.*)$/m.exec(run.stdout)?.[1];
    assert.ok(report, 'a report PR line');
    assert.match(report, /^http:\/\/127\.0\.0\.1:\d+\/acme\/plans\/pull\/\d+$/);
    assert.match(run.stdout, /rollout completed; demo wall time \d+ s/);
    assert.doesNotMatch(run.stdout + run.stderr, /ghs_[0-9a-f]{8,}/, 'no token printed');
  });
});
