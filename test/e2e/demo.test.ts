// `npm run demo` end to end, as CI runs it: stdout is not a TTY (plain lines), sub-second
// simulator timings. The demo itself is the system under test: its exit code, the summary table
// it prints and the report line; the rollout it shows was made by the real controller process.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../support/manifests.js';

interface DemoRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runDemo(args: string[]): Promise<DemoRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'test/demo/main.ts'), '--timings', 'test', ...args], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const ROLLED = ['cp-1', 'cp-2', 'cp-3', 'worker-1', 'worker-2', 'worker-3', 'worker-4', 'worker-5', 'worker-6', 'worker-7', 'worker-8'];

/** The summary table's row of `node`, split into its columns. */
function summaryRow(stdout: string, node: string): string[] | undefined {
  const header = stdout.split('\n').findIndex((l) => /^node\s+group\s+Talos\s+Kubernetes\s+cordoned\s+total\s+result$/.test(l));
  if (header < 0) return undefined;
  const row = stdout.split('\n').slice(header + 2).find((l) => l.startsWith(`${node} `));
  return row?.split(/\s{2,}/);
}

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
    const context = `exit ${String(run.code)}\nstdout:\n${run.stdout.slice(-4000)}\nstderr:\n${run.stderr.slice(-2000)}`;
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

  it('failure-pause: the node that does not come back on the target is rolled back, the Pause policy pauses, the demo resumes and retries it, and the rollout completes', async function () {
    const run = await runDemo(['--scenario', 'failure-pause']);
    const context = `exit ${String(run.code)}\nstdout:\n${run.stdout.slice(-4000)}\nstderr:\n${run.stderr.slice(-2000)}`;
    assert.equal(run.code, 0, context);
    assert.match(run.stdout, /worker-3 was rolled back: node worker-3 failed on v1\.13\.2 \(RebootTimeout: .*\) and was rolled back to v1\.12\.4, Ready again/, context);
    assert.match(run.stdout, /the Pause policy paused the plan/);
    assert.match(run.stdout, /\$ kubectl patch patchplan failure-pause --type merge -p '\{"spec":\{"paused":false\}\}'/);
    assert.match(run.stdout, /\$ kubectl delete patchjob failure-pause-worker-3/);
    assert.equal(summaryRow(run.stdout, 'worker-3')?.[6], 'Completed', context);
    assert.equal(summaryRow(run.stdout, 'worker-3')?.[2], 'v1.12.4 → v1.13.2');
  });

  it('auto-update: a release appears, the controller opens a proposal PR, the demo merges it, the child plan rolls out, exit 0', async function () {
    const run = await runDemo(['--scenario', 'auto-update']);
    const context = `exit ${String(run.code)}\nstdout:\n${run.stdout.slice(-4000)}\nstderr:\n${run.stderr.slice(-2000)}`;
    assert.equal(run.code, 0, context);
    assert.match(run.stdout, /\$ git add plans\/production\.yaml && git commit .* && git push/, 'the template pushed with git');
    assert.match(run.stdout, /plan production: Watching/, 'the template watches, patching nothing');
    assert.match(run.stdout, /upstream releases Talos v1\.12\.5/);
    const proposal = /^\[[\s\dms]+\] proposal PR: (\S+) "([^"]+)"/m.exec(run.stdout);
    assert.ok(proposal, `a proposal PR line\n${context}`);
    assert.match(proposal[1] ?? '', /^http:\/\/127\.0\.0\.1:\d+\/acme\/plans\/pull\/\d+$/);
    assert.equal(proposal[2], 'KangalPatch [demo]: Talos v1.12.5 for production');
    assert.match(run.stdout, /PUT \/repos\/acme\/plans\/pulls\/\d+\/merge/, 'merged through the forge API');
    assert.match(run.stdout, /the merge added plans\/production-v1-12-5\.yaml: PatchPlan production-v1-12-5 \(label kangalpatch\.ozalp\.dk\/auto-update-template: production\)/);
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
    assert.match(report ?? '', /^http:\/\/127\.0\.0\.1:\d+\/acme\/plans\/pull\/\d+$/, 'the child plan\'s report PR');
    assert.notEqual(report, proposal[1]);
    assert.doesNotMatch(run.stdout + run.stderr, /ghs_[0-9a-f]{8,}/, 'no token printed');
  });
});
