// Stepwise upgrade paths through the real `kangal-patch run` process: one plan takes a fleet on
// Talos 1.11 / Kubernetes 1.30 to Talos 1.13 / Kubernetes 1.35. The versions come from the lab
// registry's tags (the releases feed is unreachable, as in an air-gapped cluster). The oracle is
// the lab: the observer's Node and Pod watches (every Talos × Kubernetes pair a node ran, the
// PatchJobs' phases with their times) and the Talos simulator's record of upgrades.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startJobLab, type JobLab } from './support/job-lab.js';
import { labPlan, type PlanDoc } from './support/plans.js';
import { runCli } from './support/cli.js';
import { waitFor } from '../lab/wait.js';

const INSTALLERS = ['v1.11.5', 'v1.12.4', 'v1.12.6', 'v1.13.2', 'v1.14.0-rc.1'].map((v) => `siderolabs/installer:${v}`);
const KUBELETS = ['v1.30.4', 'v1.31.2', 'v1.31.4', 'v1.32.3', 'v1.33.1', 'v1.34.2', 'v1.35.2', 'v1.36.0-rc.0'].map(
  (v) => `siderolabs/kubelet:${v}`,
);
const NODES = ['cp-1', 'worker-1', 'worker-2'];
/** The path: every Talos minor at its latest patch, Kubernetes a minor at a time, Talos 1.13 only once Kubernetes is at least 1.31. */
const PATH = [
  '1 talos v1.12.6',
  '2 kubernetes v1.31.4',
  '3 talos v1.13.2',
  '4 kubernetes v1.32.3',
  '5 kubernetes v1.33.1',
  '6 kubernetes v1.34.2',
  '7 kubernetes v1.35.2',
];
/** The Talos support matrix as Sidero documents it (Kubernetes minors per Talos minor), kept apart from the product's table. */
const SUPPORTED: Record<string, [number, number]> = { '1.11': [29, 34], '1.12': [30, 35], '1.13': [31, 36] };
const ARGS = ['--releases-api-url', 'http://127.0.0.1:1'];

type Hop = {
  number: number;
  kind: string;
  version: string;
  state: string;
  startTime?: string;
  completionTime?: string;
};
const hopsOf = (status: Record<string, unknown>): Hop[] => (status['path'] as { hops?: Hop[] } | undefined)?.hops ?? [];
const minor = (v: string): string => /^v(\d+\.\d+)\./.exec(v)?.[1] ?? v;

const planDoc = (target: Record<string, unknown>): PlanDoc => ({
  apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
  kind: 'PatchPlan',
  metadata: { name: 'catch-up' },
  spec: { target, strategy: { order: ['controlPlane', 'workers'] }, failurePolicy: { type: 'Pause', maxFailures: 1 } },
});

describe('PatchPlan end to end: a stepwise path across Talos and Kubernetes minors', function () {
  this.timeout(600_000);
  let lab: JobLab;
  before(async function () {
    lab = await startJobLab({
      fleet: { nodes: 3, controlPlanes: 1, talosVersion: 'v1.11.5', kubernetesVersion: 'v1.30.4' },
      kubeProxy: true,
      images: [...INSTALLERS, ...KUBELETS],
      workloads: [{ namespace: 'shop', name: 'web', kind: 'replicaset', replicas: 2, pdb: { maxUnavailable: 1 } }],
    });
  });
  after(async function () {
    await lab?.stop();
  });

  it('`preview` prints the whole path before anything is merged: every hop with its reason, the installers of every Talos hop checked', async function () {
    const dir = mkdtempSync(join(tmpdir(), 'kp-path-preview-'));
    const file = join(dir, 'catch-up.yaml');
    writeFileSync(
      file,
      stringify(
        labPlan(
          planDoc({ talosVersion: 'v1.13.2', kubernetesVersion: 'v1.35.2', path: 'stepwise' }),
          lab.talos.endpoint,
        ),
      ),
    );
    const run = await runCli([
      'preview',
      file,
      '--kubeconfig',
      lab.cluster.kubeconfigPath,
      '--namespace',
      'kangal-patch',
      ...lab.mirrorArgs,
      ...ARGS,
    ]);
    rmSync(dir, { recursive: true, force: true });
    assert.equal(run.code, 0, run.err + run.out);
    assert.match(
      run.out,
      /^target: Talos v1\.13\.2, Kubernetes v1\.35\.2 \(stepwise: the destination, reached hop by hop\)$/m,
    );
    assert.match(run.out, /^path: 7 hop\(s\)/m);
    const hops = run.out.split('\n').filter((l) => /^ {2}\d\. (Talos|Kubernetes) v/.test(l));
    assert.deepEqual(
      hops.map((l) => l.split(':')[0]?.trim()),
      PATH.map((p) => {
        const [n, kind, v] = p.split(' ');
        return `${n}. ${kind === 'talos' ? 'Talos' : 'Kubernetes'} ${v}`;
      }),
    );
    for (const l of hops) assert.match(l, /: \S.{20,}/, `a reason for each hop: ${l}`);
    assert.match(
      run.out,
      /ok +UpgradePath: 7 hop\(s\) from the tags of ghcr\.io\/siderolabs\/installer \(the releases feed failed: /,
    );
    assert.match(run.out, /ok +InstallerImages: 2 installer image\(s\) exist/);
    for (const n of NODES) assert.equal(lab.talos.node(n).upgradesStarted, 0, `preview changed nothing on ${n}`);
  });

  it('walks every hop in order with no unsupported pair; a failed hop pauses the plan naming it; a SIGKILL mid-path resumes the same hops', async function () {
    // worker-2 cannot get the installer of hop 3 (Talos v1.13.2): its upgrade there fails.
    lab.talos.node('worker-2').faults.missingImages = ['ghcr.io/siderolabs/installer:v1.13.2'];
    let controller = lab.startController({ args: ARGS });
    await lab.applyPlan(
      labPlan(planDoc({ talosVersion: 'v1.13.2', kubernetesVersion: 'v1.35.2', path: 'stepwise' }), lab.talos.endpoint),
    );

    // The failure policy stops the plan at the hop that failed, and the status says which.
    const paused = await lab.waitForPlan(
      'catch-up',
      'paused by the failure policy',
      (s) => ['Paused', 'Failed', 'Completed'].includes(String(s['phase'])),
      240_000,
    );
    assert.equal(paused['phase'], 'Paused', JSON.stringify(paused));
    assert.deepEqual(
      hopsOf(paused).map((h) => `${h.number} ${h.kind} ${h.version}`),
      PATH,
    );
    assert.deepEqual(
      hopsOf(paused).map((h) => h.state),
      ['Completed', 'Completed', 'InProgress', 'Pending', 'Pending', 'Pending', 'Pending'],
    );
    // The pass that paused says so; a later pass (the spec.paused the policy set) says it is paused: both name the hop.
    assert.match(
      String(paused['message']),
      /^hop 3 of 7 \(Talos v1\.13\.2\): .*(the Pause failure policy paused the plan|paused by the Pause failure policy)/,
    );
    assert.equal((await lab.job('catch-up-h3-worker-2'))?.status.phase, 'Failed');
    assert.equal(
      lab.observer.node('worker-2')?.osImage,
      'Talos (v1.12.6)',
      'hops 1 and 2 moved worker-2 before hop 3 failed on it',
    );
    assert.equal(lab.observer.node('worker-2')?.kubeletVersion, 'v1.31.4');

    // Retried: the pull fixed, the failed job deleted, the plan resumed.
    lab.talos.node('worker-2').faults.missingImages = undefined;
    await lab.deleteJob('catch-up-h3-worker-2');
    await lab.patchPlanSpec('catch-up', { paused: false });

    // Killed while hop 4 rolls out; the next controller goes on with the same hops.
    await waitFor(
      async () => (hopsOf((await lab.plan('catch-up'))?.status ?? {})[3]?.state === 'InProgress' ? true : undefined),
      { timeoutMs: 240_000, description: 'hop 4 rolling out' },
    );
    await controller.kill();
    controller = lab.startController({ args: ARGS });
    const done = await lab.waitForPlan(
      'catch-up',
      'Completed',
      (s) =>
        ['Completed', 'Failed'].includes(String(s['phase'])) || (s['phase'] === 'Paused' && s['paused'] !== undefined),
      400_000,
    );
    assert.equal(done['phase'], 'Completed', JSON.stringify(done));
    const hops = hopsOf(done);
    assert.deepEqual(
      hops.map((h) => `${h.number} ${h.kind} ${h.version} ${h.state}`),
      PATH.map((p) => `${p} Completed`),
      'the same seven hops, numbers kept across the restart',
    );
    assert.equal((done['path'] as { changed?: string }).changed, undefined);
    assert.match(String(done['message']), /^path done, 7 hop\(s\)/);

    // Every node ends on the destination.
    for (const n of NODES) {
      assert.equal(lab.observer.node(n)?.osImage, 'Talos (v1.13.2)', `${n} Talos`);
      assert.equal(lab.observer.node(n)?.kubeletVersion, 'v1.35.2', `${n} kubelet`);
      // Two Talos upgrades booted per node (1.12.6, then 1.13.2): no minor skipped, none done twice.
      assert.equal(lab.talos.node(n).bootsIntoNewVersion, 2, `${n}: two Talos upgrades booted`);
    }
    // No node ever ran a pair the support matrix does not allow (the observer's own watches).
    const unsupported = lab.observer.versionPairs.filter((p) => {
      const window = SUPPORTED[minor(p.talos)];
      const k = Number(minor(p.version).split('.')[1]);
      return window === undefined || k < window[0] || k > window[1];
    });
    assert.deepEqual(unsupported, [], 'every Talos × Kubernetes pair seen was supported');
    assert.deepEqual(lab.observer.skewViolations, []);
    // Each hop began after the one before ended: no job of hop N+1 was created before every job of hop N ended (observer; the retried job of hop 3 included).
    const jobEvents = lab.observer.events.filter((e) => e.kind === 'jobCreated' || e.kind === 'jobPhase');
    const hopOf = (job: string): number => Number(/^catch-up-h(\d+)-/.exec(job)?.[1] ?? 0);
    for (let hop = 2; hop <= 7; hop++) {
      const firstCreated = Math.min(
        ...jobEvents.filter((e) => e.kind === 'jobCreated' && hopOf(e.detail) === hop).map((e) => e.at),
      );
      const lastEnded = Math.max(
        ...jobEvents
          .filter(
            (e) =>
              e.kind === 'jobPhase' &&
              hopOf(e.detail.split(' ')[0] ?? '') === hop - 1 &&
              /(Completed|Failed)$/.test(e.detail),
          )
          .map((e) => e.at),
      );
      assert.ok(Number.isFinite(firstCreated) && Number.isFinite(lastEnded), `hop ${hop}: jobs seen`);
      assert.ok(firstCreated > lastEnded, `hop ${hop} started after hop ${hop - 1} ended`);
    }
    assert.ok(lab.observer.maxConcurrentLeasesInGroup('catch-up', 'workers') <= 1);
    await controller.stop();
  });
});
