// PatchPlan rollouts through the real `kangal-patch run` process: the docs' custom-groups
// example on a 12-node fleet (overlapping groups, strict order, per-group concurrency), and two
// controller replicas racing for the same slots. The oracle is the lab: the observer's own watches
// of Nodes, Leases and PatchJobs and the Talos simulator's record.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { examplePlan, factoryImage, labPlan, type PlanDoc } from './support/plans.js';
import { runCli } from './support/cli.js';
import { waitFor } from '../lab/wait.js';
import type { Observation } from '../lab/observer.js';
import { startApiInterposer } from '../lab/cluster/interposer.js';
import { VANILLA_SCHEMATIC } from '../lab/talos/index.js';
import { installerPulls, prePullViolations } from '../lab/talos/pre-pulls.js';

const TARGET = 'v1.13.2';
// From Talos 1.14 the installer comes from the Image Factory only.
const FACTORY = { source: 'factory', installer: 'nocloud' };
const prod = { environment: 'production' };
// 3 control planes; worker-1/2 databases (worker-2 also has a GPU: the database group claims it);
// worker-3/4 GPUs; worker-5..8 plain; worker-9 is not in production and must never be touched.
const LABELS: Record<string, Record<string, string>> = {
  'cp-1': prod,
  'cp-2': prod,
  'cp-3': prod,
  'worker-1': { ...prod, workload: 'database' },
  'worker-2': { ...prod, workload: 'database', accelerator: 'nvidia' },
  'worker-3': { ...prod, accelerator: 'nvidia' },
  'worker-4': { ...prod, accelerator: 'nvidia' },
  'worker-5': prod,
  'worker-6': prod,
  'worker-7': prod,
  'worker-8': prod,
  'worker-9': { environment: 'staging' },
};
const EXPECTED_GROUP: Record<string, string> = {
  'cp-1': 'controlPlane',
  'cp-2': 'controlPlane',
  'cp-3': 'controlPlane',
  'worker-1': 'database',
  'worker-2': 'database',
  'worker-3': 'gpu',
  'worker-4': 'gpu',
  'worker-5': 'workers',
  'worker-6': 'workers',
  'worker-7': 'workers',
  'worker-8': 'workers',
};
const ORDER = ['controlPlane', 'database', 'gpu', 'workers'];
const CONCURRENCY: Record<string, number> = { controlPlane: 1, database: 1, gpu: 2, workers: 3 };

interface PreviewJson {
  preview: {
    groups: { name: string; concurrency: number; rounds: number; nodes: { name: string; installerImage?: string }[] }[];
    skipped: { name: string; reason: string }[];
  };
  preflight: { checks: { name: string; passed: boolean }[]; skipped: unknown[] };
}

/**
 * `kangal-patch preview` of the custom-groups plan, through the real CLI process before anything
 * exists in the cluster: its JSON (groups, rounds, images, preflight) and its text without the Talos
 * credentials. Returns the preview's nodes per group, in order.
 */
async function assertPreview(lab: JobLab, doc: PlanDoc): Promise<Map<string, string[]>> {
  const dir = mkdtempSync(join(tmpdir(), 'kp-preview-'));
  const file = join(dir, 'custom-groups.yaml');
  writeFileSync(file, stringify(doc));
  const previewArgs = ['preview', file, '--kubeconfig', lab.cluster.kubeconfigPath, ...lab.mirrorArgs];
  const json = await runCli([...previewArgs, '--namespace', 'kangal-patch', '--output', 'json']);
  const text = await runCli([...previewArgs, '--namespace', 'default']);
  rmSync(dir, { recursive: true, force: true });
  assert.equal(json.code, 0, json.err + json.out);
  const report = JSON.parse(json.out) as PreviewJson;
  const previewOrder = new Map(report.preview.groups.map((g) => [g.name, g.nodes.map((n) => n.name)]));
  assert.deepEqual([...previewOrder.keys()], ORDER);
  for (const g of ORDER)
    assert.deepEqual(
      [...(previewOrder.get(g) ?? [])].sort(),
      Object.keys(EXPECTED_GROUP)
        .filter((n) => EXPECTED_GROUP[n] === g)
        .sort(),
      `preview: nodes of ${g}`,
    );
  assert.deepEqual(
    report.preview.groups.map((g) => [g.concurrency, g.rounds]),
    [
      [1, 3],
      [1, 2],
      [2, 1],
      [3, 2],
    ],
  );
  assert.deepEqual(
    report.preview.skipped.map((s) => [s.name, s.reason]),
    [['worker-9', 'NotSelected']],
  );
  assert.ok(
    report.preview.groups
      .flatMap((g) => g.nodes)
      .every((n) => n.installerImage === `factory.talos.dev/${factoryImage('nocloud', TARGET)}`),
  );
  assert.deepEqual(report.preflight.skipped, []);
  const checkNames = report.preflight.checks.map((c) => c.name);
  for (const c of ['SelectionNonEmpty', 'TalosCredentials', 'SupportMatrix', 'InstallerImages'])
    assert.ok(checkNames.includes(c), `preflight ${c} ran: ${checkNames.join(', ')}`);
  assert.ok(
    report.preflight.checks.every((c) => c.passed),
    JSON.stringify(report.preflight.checks),
  );
  // Without the Talos credentials (another operator namespace): the Talos API checks say they were skipped.
  assert.equal(text.code, 0, text.err + text.out);
  assert.match(text.out, /^ {2}1\. controlPlane: 3 node\(s\), concurrency 1, 3 round\(s\)$/m);
  assert.match(text.out, /worker-9: NotSelected: not selected by spec\.nodeSelector/);
  assert.match(
    text.out,
    /skip {2}TalosCredentials: skipped: no Talos credentials \(Secret default\/talos-credentials does not exist\)/,
  );
  assert.match(text.out, /ok +InstallerImages: 1 installer image\(s\) exist/);
  for (const n of Object.keys(EXPECTED_GROUP))
    assert.equal(lab.talos.node(n).calls.length, 0, `preview changed nothing on ${n}`);
  return previewOrder;
}

function assertGroupConcurrency(lab: JobLab): void {
  for (const g of ORDER)
    assert.ok(
      lab.observer.maxConcurrentLeasesInGroup('custom-groups', g) <= (CONCURRENCY[g] ?? 1),
      `group ${g} within concurrency`,
    );
}

function assertStrictGroupOrder(phases: readonly Observation[]): void {
  const firstStart = (g: string): number =>
    Math.min(...phases.filter((e) => EXPECTED_GROUP[e.node] === g && e.detail.endsWith(' Pending')).map((e) => e.at));
  const lastEnd = (g: string): number =>
    Math.max(
      ...phases.filter((e) => EXPECTED_GROUP[e.node] === g && /(Completed|Failed)$/.test(e.detail)).map((e) => e.at),
    );
  for (let i = 1; i < ORDER.length; i++) {
    assert.ok(
      firstStart(ORDER[i] ?? '') >= lastEnd(ORDER[i - 1] ?? ''),
      `${ORDER[i] ?? ''} started after ${ORDER[i - 1] ?? ''} finished`,
    );
  }
}

/**
 * The preview's order is the order the jobs started: a node starts no earlier than every node at
 * least `concurrency` places before it (nodes in one round start together, in any order).
 */
function assertPreviewOrderKept(phases: readonly Observation[], previewOrder: Map<string, string[]>): void {
  const started = (n: string): number => Math.min(...phases.filter((e) => e.node === n).map((e) => e.at));
  for (const g of ORDER) {
    const nodes = previewOrder.get(g) ?? [];
    const c = CONCURRENCY[g] ?? 1;
    for (let j = c; j < nodes.length; j++) {
      for (let i = 0; i <= j - c; i++)
        assert.ok(
          started(nodes[i] ?? '') <= started(nodes[j] ?? ''),
          `group ${g}: ${nodes[i] ?? ''} (preview position ${i + 1}) started before ${nodes[j] ?? ''} (position ${j + 1})`,
        );
    }
  }
}

/** Each claimed node upgraded once, on the target with its own schematic, given back, by its first matching group. */
async function assertUpgradedOnceInGroup(lab: JobLab): Promise<void> {
  for (const [node, group] of Object.entries(EXPECTED_GROUP)) {
    assert.equal(lab.talos.node(node).upgradesStarted, 1, `${node} upgraded once`);
    assert.equal(lab.observer.node(node)?.osImage, `Talos (${TARGET})`);
    // The installer decides what the node boots (issue 22): the factory installer of the node's own schematic keeps it.
    assert.equal(lab.talos.node(node).schematic, VANILLA_SCHEMATIC, `${node} kept its schematic`);
    assert.equal(lab.observer.node(node)?.unschedulable, false, `${node} not cordoned`);
    const job = await lab.job(`custom-groups-${node}`);
    assert.equal(job?.spec.group, group, `${node} in group ${group}`);
  }
}

/**
 * One group of the pre-pull test: its first round pulls for itself; every later node was pre-pulled
 * while a node of the round before it was cordoned (the observer's watch of the Nodes, since `applied`).
 */
function assertRoundsPrePulled(
  lab: JobLab,
  g: { name: string; concurrency: number; nodes: string[] },
  pulls: ReturnType<typeof installerPulls>,
  applied: number,
): void {
  // The first round (the first `concurrency` nodes) has nobody before it; every later node was pre-pulled.
  const order = pulls.filter((p) => g.nodes.includes(p.node));
  assert.deepEqual(
    order.slice(0, g.concurrency).map((p) => p.prePull),
    [undefined, undefined],
    `group ${g.name}: the first round pulls for itself`,
  );
  for (const p of order.slice(g.concurrency)) {
    assert.ok(p.prePull, `${p.node}: pre-pulled`);
    // While the round before it was cordoned (the observer's watch of the Nodes).
    const cordoned = order.slice(0, g.concurrency).some((r) => {
      const on = lab.observer.of(r.node, ['cordoned', 'uncordoned']).filter((e) => e.at >= applied);
      const from = on.find((e) => e.kind === 'cordoned')?.at ?? Infinity;
      const to = on.find((e) => e.kind === 'uncordoned' && e.at >= from)?.at ?? Infinity;
      return from <= (p.prePull?.endedAt ?? 0) && (p.prePull?.at ?? 0) <= to;
    });
    const seen = order
      .slice(0, g.concurrency)
      .map(
        (r) =>
          `${r.node} ${lab.observer
            .of(r.node, ['cordoned', 'uncordoned'])
            .filter((e) => e.at >= applied)
            .map((e) => `${e.kind}@${e.at - applied}`)
            .join(' ')} own pull ${r.own.at - applied}..${(r.own.endedAt ?? 0) - applied}`,
      )
      .join('; ');
    assert.ok(
      cordoned,
      `${p.node}: pre-pulled (${(p.prePull?.at ?? 0) - applied}..${(p.prePull?.endedAt ?? 0) - applied} ms) while a node of the current round was cordoned: ${seen}`,
    );
  }
}

describe('PatchPlan end to end: rollouts', function () {
  this.timeout(300_000);
  let lab: JobLab;

  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 12, controlPlanes: 3, talosVersion: 'v1.12.4' },
      labels: LABELS,
      images: [TARGET, 'v1.14.0', 'v1.14.1', 'v1.14.2', 'v1.14.3'].map((v) => factoryImage('nocloud', v)),
      workloads: [
        {
          namespace: 'shop',
          name: 'web',
          kind: 'replicaset',
          replicas: 6,
          pdb: { maxUnavailable: 1 },
          nodeSelector: prod,
        },
      ],
    });
  });
  after(async function () {
    await lab?.stop();
  });

  it('rolls out the custom-groups example: overlapping groups, strict order, per-group concurrency, one upgrade per node; `preview` printed that order first', async function () {
    const example = examplePlan('custom-groups.yaml');
    const target: Record<string, unknown> = {
      ...(example.spec.target as Record<string, unknown>),
      talosVersion: TARGET,
    };
    delete target.kubernetesVersion; // Kubernetes upgrades come with their own issue
    const doc = labPlan(example, lab.talos.endpoint, { target });
    // The preview first, through the real CLI process, before anything exists in the cluster.
    const previewOrder = await assertPreview(lab, doc);

    const controller = lab.startController();
    await lab.applyPlan(doc);
    const status = await lab.waitForPlan(
      'custom-groups',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      240_000,
    );
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    assert.equal(status.totalNodes, 11);
    assert.equal(status.completedNodes, 11);
    assert.deepEqual(
      (status.groups as { name: string }[]).map((g) => g.name),
      ORDER,
    );
    assert.match(
      String(
        (status.conditions as { type: string; message: string }[]).find((c) => c.type === 'PreflightPassed')?.message,
      ),
      /database \(2 node\(s\), concurrency 1\): worker-1, worker-2/,
    );

    // Completed is written before the last node is uncordoned and its slot freed (later passes).
    await waitFor(
      () =>
        (lab.observer.liveLeases().length === 0 &&
          Object.keys(EXPECTED_GROUP).every((n) => lab.observer.node(n)?.unschedulable === false)) ||
        undefined,
      {
        timeoutMs: 15_000,
        description: 'every slot Lease released and every node uncordoned',
      },
    );
    // Per-group concurrency, from the observer's Lease watch.
    assertGroupConcurrency(lab);
    // Strict group order, from the observer's PatchJob watch: a group's first job after the previous group's last finished.
    const phases = lab.observer.events.filter((e) => e.kind === 'jobPhase');
    assertStrictGroupOrder(phases);
    assertPreviewOrderKept(phases, previewOrder);
    // Each claimed node upgraded once, by its first matching group; the staging node untouched.
    await assertUpgradedOnceInGroup(lab);
    assert.equal(lab.talos.node('worker-9').calls.length, 0, 'the node outside nodeSelector was never touched');
    assert.equal(await lab.job('custom-groups-worker-9'), undefined);
    assert.ok(
      lab.talos.node('worker-1').calls.some((c) => c.image?.startsWith('factory.talos.dev/nocloud-installer/')),
      'factory installer for nocloud',
    );
    await controller.stop();
  });

  it('two replicas racing for the same slots never exceed the concurrency', async function () {
    // Without leader election both act: the slot Leases alone keep the concurrency.
    const a = lab.startController({ name: 'racer-a' });
    const b = lab.startController({ name: 'racer-b' });
    await lab.applyPlan(
      labPlan(
        { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'race' }, spec: {} },
        lab.talos.endpoint,
        {
          target: { talosVersion: 'v1.14.0', ...FACTORY },
          groups: { workers: { concurrency: 3 } },
          strategy: { order: ['workers'] },
          nodeSelector: { matchLabels: prod },
        },
      ),
    );
    const status = await lab.waitForPlan(
      'race',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      240_000,
    );
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    assert.ok(
      lab.observer.maxConcurrentLeasesInGroup('race', 'workers') <= 3,
      `peak ${lab.observer.maxConcurrentLeasesInGroup('race', 'workers')}`,
    );
    for (const node of Object.keys(EXPECTED_GROUP).filter((n) => n.startsWith('worker'))) {
      assert.equal(lab.talos.node(node).upgradesStarted, 2, `${node}: one upgrade per plan (two plans)`);
    }
    await Promise.all([a.stop(), b.stop()]);
  });

  it('leader failover mid-rollout: the standby continues, no node upgraded twice, concurrency kept during the handover', async function () {
    const election = [
      '--leader-elect',
      'true',
      '--leader-election-lease-duration',
      '4s',
      '--leader-election-renew-deadline',
      '3s',
      '--leader-election-retry-period',
      '500ms',
    ];
    const leading = (c: { logs(): Record<string, unknown>[] }): boolean =>
      c.logs().some((l) => String(l.msg).startsWith('leading'));
    const a = lab.startController({ name: 'leader-a', args: election });
    await waitFor(() => leading(a) || undefined, { timeoutMs: 30_000, description: 'leader-a leading' });
    const b = lab.startController({ name: 'leader-b', args: election });
    await waitFor(() => b.logs().some((l) => l.msg === 'waiting to become leader') || undefined, {
      timeoutMs: 30_000,
      description: 'leader-b standing by',
    });
    lab.talos.setTimings({ rebootMs: 1_000 });
    await lab.applyPlan(
      labPlan(
        { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'failover' }, spec: {} },
        lab.talos.endpoint,
        {
          target: { talosVersion: 'v1.14.1', ...FACTORY },
          groups: { workers: { concurrency: 2 } },
          strategy: { order: ['workers'] },
          nodeSelector: { matchLabels: prod },
        },
      ),
    );
    await lab.waitForPlan('failover', 'two nodes done', (s) => Number(s.completedNodes) >= 2, 120_000);
    await a.kill();
    const status = await lab.waitForPlan(
      'failover',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      180_000,
    );
    lab.talos.setTimings({ rebootMs: 120 });
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    assert.ok(leading(b), 'the standby took over');
    assert.ok(lab.observer.maxConcurrentLeasesInGroup('failover', 'workers') <= 2);
    for (const node of Object.keys(EXPECTED_GROUP).filter((n) => n.startsWith('worker'))) {
      assert.equal(lab.talos.node(node).upgradesStarted, 3, `${node}: one upgrade for this plan (three plans in all)`);
      assert.equal(lab.observer.node(node)?.osImage, 'Talos (v1.14.1)');
    }
    await b.stop();
  });

  it("pre-pulls the next round's installer while the current round is cordoned: bounded by concurrency, never a node of a later group, one upgrade per node, the jobs' own pull finds the image there", async function () {
    // Lifecycle flow (the workers run v1.14.1 now); a pull long enough to see, a reboot longer than it.
    const groups = [
      { name: 'first', concurrency: 2, nodes: ['worker-1', 'worker-2', 'worker-3', 'worker-4'] },
      { name: 'second', concurrency: 2, nodes: ['worker-5', 'worker-6', 'worker-7', 'worker-8'] },
    ];
    const since = lab.talos.lastCallSeq();
    const applied = Date.now();
    const upgradesBefore = new Map(groups.flatMap((g) => g.nodes).map((n) => [n, lab.talos.node(n).upgradesStarted]));
    lab.talos.setTimings({ pullMs: 600, rebootMs: 1_200 });
    const controller = lab.startController({ name: 'prepull' });
    await lab.applyPlan(
      labPlan(
        { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'prepull' }, spec: {} },
        lab.talos.endpoint,
        {
          target: { talosVersion: 'v1.14.2', ...FACTORY },
          groups: Object.fromEntries(
            groups.map((g) => [
              g.name,
              {
                concurrency: g.concurrency,
                selector: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: g.nodes }] },
              },
            ]),
          ),
          strategy: { order: groups.map((g) => g.name) },
          nodeSelector: { matchLabels: prod },
        },
      ),
    );
    const status = await lab.waitForPlan(
      'prepull',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      120_000,
    );
    lab.talos.setTimings({ pullMs: 30, rebootMs: 120 });
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    assert.equal(status.prePulls, undefined, 'every pre-pull entry went once its node had a PatchJob');

    // The simulator's record alone: bounds per group, and nothing outside the plan's nodes.
    const calls = lab.talos.callLog({ since });
    assert.deepEqual(prePullViolations(calls, groups), []);
    const pulls = installerPulls(calls);
    assert.equal(pulls.length, 8, 'every node pulled its installer');
    for (const g of groups) assertRoundsPrePulled(lab, g, pulls, applied);
    // The jobs' own pull found the image there, in the namespace it pulls into: Talos skipped it and
    // answered only the name (no progress on the wire), and the job's status says so.
    const found = pulls.filter((p) => p.prePull?.endedAt !== undefined && p.prePull.endedAt <= p.own.at);
    assert.ok(found.length > 0, "some pre-pull ended before its node's turn");
    for (const p of found) {
      assert.equal(p.own.effect, 'already present', `${p.node}: its own pull downloaded nothing`);
      assert.equal(
        (await lab.job(`prepull-${p.node}`))?.status.installerAlreadyPulled,
        true,
        `${p.node}: the PatchJob says the installer was already there`,
      );
    }
    for (const p of pulls.filter((x) => x.prePull === undefined))
      assert.equal(p.own.effect, 'pulled', `${p.node}: a first-round node downloads`);
    for (const node of groups.flatMap((g) => g.nodes))
      assert.equal(
        lab.talos.node(node).upgradesStarted,
        (upgradesBefore.get(node) ?? 0) + 1,
        `${node}: one upgrade for this plan`,
      );
    for (const g of groups) assert.ok(lab.observer.maxConcurrentLeasesInGroup('prepull', g.name) <= g.concurrency);
    await controller.stop();
  });

  it("SIGKILLed in a scheduling pass between its slot Lease and that node's PatchJob: the restarted controller creates the job on the Lease it finds, one upgrade per node", async function () {
    // After the pre-pull test (these workers run v1.14.2 now): v1.14.3 is one step, as preflight's UpgradePath requires.
    const nodes = ['worker-5', 'worker-6', 'worker-7'];
    const upgradesBefore = new Map(nodes.map((n) => [n, lab.talos.node(n).upgradesStarted]));
    const applied = Date.now();
    // The first controller talks through an interposer that kills it when its first PatchJob create
    // arrives; no PatchJob create of it reaches the apiserver (a round's creates are sent together).
    const interposer = await startApiInterposer(lab.cluster);
    const first = lab.startController({ name: 'killed-scheduling', kubeconfig: interposer.kubeconfigPath });
    let killedAt: number | undefined;
    interposer.setBeforeForward(async (req) => {
      if (req.method !== 'POST' || !/\/patchjobs(\?|$)/.test(req.path)) return;
      if (killedAt === undefined) {
        killedAt = Date.now();
        await first.kill();
      }
      return { status: 503 };
    });
    try {
      await lab.applyPlan(
        labPlan(
          { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'killed' }, spec: {} },
          lab.talos.endpoint,
          {
            target: { talosVersion: 'v1.14.3', ...FACTORY },
            groups: {
              plain: {
                concurrency: 2,
                selector: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: nodes }] },
              },
            },
            strategy: { order: ['plain'] },
            nodeSelector: { matchLabels: prod },
          },
        ),
      );
      await waitFor(() => killedAt, {
        timeoutMs: 60_000,
        description: 'the controller killed at its first PatchJob create',
      }).catch(async (err: Error) => {
        throw new Error(
          `${err.message}; plan status ${JSON.stringify((await lab.plan('killed'))?.status)}; Leases seen ${lab.observer.events
            .filter((e) => e.kind === 'leaseCreated' && e.at >= applied)
            .map((e) => e.detail)
            .join(', ')}`,
        );
      });
      const leasesOf = (): string[] =>
        lab.observer.events
          .filter((e) => e.kind === 'leaseCreated' && e.detail.startsWith('killed-'))
          .map((e) => e.detail);
      const leasesAtKill = await waitFor(() => (leasesOf().length >= 2 ? leasesOf() : undefined), {
        timeoutMs: 10_000,
        description: "the observer saw the round's Leases",
      });
      assert.equal(leasesAtKill.length, 2, `the round's Leases came first: ${leasesAtKill.join(', ')}`);
      assert.equal(
        lab.observer.events.filter((e) => e.kind === 'jobCreated' && e.at >= applied).length,
        0,
        'no PatchJob before the kill',
      );
    } finally {
      interposer.setBeforeForward(undefined);
      await interposer.close();
    }
    const second = lab.startController({ name: 'after-kill' });
    const status = await lab.waitForPlan(
      'killed',
      'Completed',
      (s) => s.phase === 'Completed' || s.phase === 'Failed',
      120_000,
    );
    await second.stop();
    assert.equal(status.phase, 'Completed', JSON.stringify(status));
    for (const node of nodes) {
      assert.equal(lab.talos.node(node).upgradesStarted, (upgradesBefore.get(node) ?? 0) + 1, `${node}: one upgrade`);
      const lease = lab.observer.events.filter((e) => e.kind === 'leaseCreated' && e.node === `killed-${node}`);
      const job = lab.observer.events.filter((e) => e.kind === 'jobCreated' && e.detail === `killed-${node}`);
      assert.equal(job.length, 1, `${node}: one PatchJob`);
      assert.equal(lease.length, 1, `${node}: one slot Lease (the restarted controller used the one it found)`);
      assert.ok((lease[0]?.at ?? Infinity) <= (job[0]?.at ?? 0), `${node}: its Lease before its PatchJob`);
    }
    assert.ok(lab.observer.maxConcurrentLeasesInGroup('killed', 'plain') <= 2);
  });
});
