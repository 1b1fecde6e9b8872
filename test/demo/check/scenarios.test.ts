// The scenarios of `npm run demo` end to end, as CI would run them: `npm run demo:check`. Each is
// a whole rollout of the demo's fleet, so they are a campaign of their own rather than part of npm
// test; what each shows has its own e2e test too (the custom-groups rollout: patchplan-rollout;
// rollback and the Pause policy: patchjob-rollback, patchplan-policies; auto-update proposals:
// gitops-auto-update). npm test runs test/e2e/demo.test.ts (a scenario it does not have is refused).
import assert from 'node:assert/strict';
import { demoContext, ROLLED, runDemo, summaryRow } from '../run-demo.js';

describe('npm run demo, every scenario (non-TTY, test timings)', function () {
  this.timeout(600_000);

  it('custom-groups: pushes the example, the controller rolls it out, the summary shows every node moved, exit 0', async function () {
    const run = await runDemo([]);
    const context = demoContext(run);
    assert.equal(run.code, 0, context);
    assert.ok(!run.stdout.includes('\u001b['), 'no ANSI redraws when stdout is not a TTY');
    assert.match(
      run.stdout,
      /\$ git add plans\/custom-groups\.yaml && git commit .* && git push/,
      'pushed with git, as a user would',
    );
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

  it('failure-pause: the node that does not come back on the target is rolled back, the Pause policy pauses, the demo resumes and retries it, and the rollout completes', async function () {
    const run = await runDemo(['--scenario', 'failure-pause']);
    const context = demoContext(run);
    assert.equal(run.code, 0, context);
    assert.match(
      run.stdout,
      /worker-3 was rolled back: node worker-3 failed on v1\.13\.2 \(RebootTimeout: .*\) and was rolled back to v1\.12\.4, Ready again/,
      context,
    );
    assert.match(run.stdout, /the Pause policy paused the plan/);
    assert.match(
      run.stdout,
      /\$ kubectl patch patchplan failure-pause --type merge -p '\{"spec":\{"paused":false\}\}'/,
    );
    assert.match(run.stdout, /\$ kubectl delete patchjob failure-pause-worker-3/);
    assert.equal(summaryRow(run.stdout, 'worker-3')?.[6], 'Completed', context);
    assert.equal(summaryRow(run.stdout, 'worker-3')?.[2], 'v1.12.4 → v1.13.2');
  });

  it('auto-update: a release appears, the controller opens a proposal PR, the demo merges it, the child plan rolls out, exit 0', async function () {
    const run = await runDemo(['--scenario', 'auto-update']);
    const context = demoContext(run);
    assert.equal(run.code, 0, context);
    assert.match(
      run.stdout,
      /\$ git add plans\/production\.yaml && git commit .* && git push/,
      'the template pushed with git',
    );
    assert.match(run.stdout, /plan production: Watching/, 'the template watches, patching nothing');
    assert.match(run.stdout, /upstream releases Talos v1\.12\.5/);
    const proposal = /^\[[\s\dms]+\] proposal PR: (\S+) "([^"]+)"/m.exec(run.stdout);
    assert.ok(proposal, `a proposal PR line\n${context}`);
    assert.match(proposal[1] ?? '', /^http:\/\/127\.0\.0\.1:\d+\/acme\/plans\/pull\/\d+$/);
    assert.equal(proposal[2], 'KangalPatch [demo]: Talos v1.12.5 for production');
    assert.match(run.stdout, /PUT \/repos\/acme\/plans\/pulls\/\d+\/merge/, 'merged through the forge API');
    assert.match(
      run.stdout,
      /the merge added plans\/production-v1-12-5\.yaml: PatchPlan production-v1-12-5 \(label kangalpatch\.ozalp\.dk\/auto-update-template: production\)/,
    );
    assert.match(run.stdout, /plan production-v1-12-5: Completed 11\/11 nodes/);
    for (const node of ROLLED) {
      const row = summaryRow(run.stdout, node);
      assert.ok(row, `a summary row for ${node}\n${context}`);
      assert.equal(row[2], 'v1.12.4 → v1.12.5', `${node} Talos`);
      assert.equal(row[3], 'v1.35.2 (unchanged)', `${node} Kubernetes`);
      assert.equal(row[6], 'Completed', `${node} result`);
    }
    assert.equal(summaryRow(run.stdout, 'worker-9'), undefined, 'the staging node is not selected by the template');
    const report = /^report PR: (.*)$/m.exec(run.stdout)?.[1];
    assert.match(report ?? '', /^http:\/\/127\.0\.0\.1:\d+\/acme\/plans\/pull\/\d+$/, "the child plan's report PR");
    assert.notEqual(report, proposal[1]);
    assert.doesNotMatch(run.stdout + run.stderr, /ghs_[0-9a-f]{8,}/, 'no token printed');
  });
});
