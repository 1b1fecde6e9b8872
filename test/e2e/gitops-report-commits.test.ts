// Issue 18: a commit that changes nothing about a plan leaves that plan's rollout report alone.
// Two finished plans from Git, each on a node of its own; a commit touching only plan B's file
// rewrites B's report (naming the new commit) and pushes nothing to A's report branch. Read from
// the lab forge's git repository, not from the controller's status.
import assert from 'node:assert/strict';
import { parse, stringify } from 'yaml';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { labPlan } from './support/plans.js';
import { waitFor } from '../lab/wait.js';

const VERSION = 'v1.12.4';

describe("GitOps reports: a commit touching only one plan file rewrites only that plan's report", function () {
  this.timeout(300_000);
  let lab: JobLab;

  /** Targets what its node runs already: finishes with nothing to do. */
  const planDoc = (name: string, node: string, spec: Record<string, unknown> = {}): string => {
    const own = { matchLabels: { 'kubernetes.io/hostname': node } };
    return stringify(
      labPlan(
        { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name }, spec: {} },
        lab.talos.endpoint,
        {
          target: { talosVersion: VERSION },
          groups: { pool: { selector: own, concurrency: 1 } },
          strategy: { order: ['pool'] },
          nodeSelector: own,
          ...spec,
        },
      ),
    );
  };
  const push = async (files: Record<string, string>, message: string): Promise<string> => {
    for (const [path, text] of Object.entries(files)) await lab.plans!.write(path, text);
    return lab.plans!.commitAndPush(message);
  };

  /** The report branch of `plan` on the forge (fetched into the clone), or undefined before the first report. */
  const reportBranch = async (plan: string): Promise<string | undefined> => {
    await lab.plans!.git([
      'fetch',
      '--quiet',
      '--prune',
      'origin',
      '+refs/heads/kangal-patch/*:refs/remotes/origin/kangal-patch/*',
    ]);
    // for-each-ref matches whole path components: list the folder, pick the plan's branch.
    const refs = (
      await lab.plans!.git([
        'for-each-ref',
        '--format=%(refname:short)',
        'refs/remotes/origin/kangal-patch/lab/report/',
      ])
    ).split('\n');
    return refs.find((r) => r.startsWith(`origin/kangal-patch/lab/report/${plan}-`));
  };
  /** The YAML twin at a commit of the report branch. */
  const reportAt = async (
    rev: string,
    plan: string,
  ): Promise<{ phase: string | null; source: { commit: string | null } }> =>
    parse(await lab.plans!.git(['show', `${rev}:status/lab/${plan}.yaml`])) as {
      phase: string | null;
      source: { commit: string | null };
    };
  /** Waits until the plan's report branch holds a Completed report naming `commit`; returns the branch's tip. */
  const reportNames = (plan: string, commit: string): Promise<{ ref: string; tip: string }> =>
    waitFor(
      async () => {
        const ref = await reportBranch(plan);
        if (ref === undefined) return undefined;
        const doc = await reportAt(ref, plan).catch(() => undefined);
        if (doc?.phase !== 'Completed' || doc.source.commit !== commit) return undefined;
        return { ref, tip: await lab.plans!.git(['rev-parse', ref]) };
      },
      {
        timeoutMs: 120_000,
        intervalMs: 500,
        description: `the report of ${plan} Completed and naming ${commit.slice(0, 12)}`,
      },
    );

  before(async function () {
    lab = await startJobLab({ fleet: { nodes: 3, controlPlanes: 1, talosVersion: VERSION }, plansRepo: true });
  });
  after(async function () {
    await lab?.stop();
  });

  it("pushes only to the touched plan's report branch; the other report still names the commit its own file came from", async function () {
    const c0 = await push(
      { 'plans/a.yaml': planDoc('a', 'worker-1'), 'plans/b.yaml': planDoc('b', 'worker-2') },
      'plans a and b',
    );
    const controller = lab.startController({
      args: lab.gitArgs({ pollInterval: '2s', extra: ['--report-min-interval', '1s'] }),
    });
    await waitFor(() => controller.logs().some((l) => l.msg === 'GitOps loop started') || undefined, {
      timeoutMs: 60_000,
      description: 'the GitOps loop to start',
    });
    const a0 = await reportNames('a', c0);
    await reportNames('b', c0);

    // Only b's file changes (a spec field a finished plan does not act on).
    const c1 = await push({ 'plans/b.yaml': planDoc('b', 'worker-2', { delayBetweenNodes: '1s' }) }, 'b only');
    await reportNames('b', c1);
    await waitFor(
      async () =>
        ((await lab.plan('a'))?.metadata.annotations as Record<string, string> | undefined)?.[
          'kangalpatch.ozalp.dk/source-commit'
        ] === c1 || undefined,
      { timeoutMs: 60_000, description: 'plan a synced to the new head' },
    );

    // Then only a's file: its report must name c2. Its report pass for c1 (if there was one) ran
    // before this one, so the branch's commits since a0 show whether c1 was pushed to it.
    const c2 = await push({ 'plans/a.yaml': planDoc('a', 'worker-1', { delayBetweenNodes: '1s' }) }, 'a only');
    const a2 = await reportNames('a', c2);
    const commits = (await lab.plans!.git(['rev-list', '--first-parent', `${a0.tip}..${a2.tip}`]))
      .split('\n')
      .filter((c) => c !== '');
    const named = await Promise.all(commits.map(async (c) => (await reportAt(c, 'a')).source.commit));
    assert.deepEqual(
      named,
      [c2],
      `commits pushed to ${a2.ref} since its report named ${c0.slice(0, 12)}, by the commit each names (c1 = ${c1.slice(0, 12)}, c2 = ${c2.slice(0, 12)})`,
    );
  });
});
