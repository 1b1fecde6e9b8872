// Five rollouts as the cluster would hold them (a running, a paused, a failed, a held and a
// completed plan) and an auto-update template with a child, all at a fixed clock, for the status
// view's tests. Specs and statuses go through the zod schemas, as the kube adapter's views do.
import { patchJobSpec, patchJobStatus, type PatchJobStatus } from '../../../schemas/patchjob.js';
import { patchPlanSpec, patchPlanStatus, type PatchPlanStatus } from '../../../schemas/patchplan.js';
import type {
  StatusInput,
  StatusJobInput,
  StatusNodeInput,
  StatusPlanInput,
} from '../../../controller/core/status-view/index.js';

/** A Tuesday, 11:00 in Berlin. */
export const T0 = Date.parse('2026-12-01T10:00:00Z');
export const at = (s: number): string => new Date(T0 + s * 1000).toISOString();

const talosConfig = { endpoints: ['10.5.0.2:50000'], secretRef: { name: 'talos-credentials' } };
const TARGET = { talosVersion: 'v1.13.2', source: 'factory', installer: 'nocloud' } as const;

/** What a plan fixture sets beyond its name, age and status: spec fields over the defaults, and its labels. */
interface PlanExtras {
  spec?: Record<string, unknown>;
  labels?: Record<string, string>;
}

function plan(
  name: string,
  createdS: number,
  status: Record<string, unknown>,
  { spec = {}, labels = {} }: PlanExtras = {},
): StatusPlanInput {
  return {
    name,
    created: T0 + createdS * 1000,
    labels,
    spec: patchPlanSpec.parse({ target: TARGET, talosConfig, groups: { workers: { concurrency: 2 } }, ...spec }),
    status: patchPlanStatus.parse(status),
  };
}

function job(
  planName: string,
  node: string,
  status: Record<string, unknown>,
  target: Record<string, unknown> = TARGET,
): StatusJobInput {
  const group = node.startsWith('cp') ? 'controlPlane' : 'workers';
  return {
    name: `${planName}-${node}`,
    labels: {
      'kangalpatch.ozalp.dk/patchplan': planName,
      'kangalpatch.ozalp.dk/group': group,
      'kangalpatch.ozalp.dk/node': node,
    },
    spec: patchJobSpec.parse({ nodeName: node, patchPlanRef: planName, group, target, talosConfig }),
    status: patchJobStatus.parse(status),
  };
}

const group = (
  name: string,
  total: number,
  c: Partial<Record<'completed' | 'running' | 'failed' | 'pending' | 'held' | 'skipped' | 'active', number>>,
  concurrency = 1,
): NonNullable<PatchPlanStatus['groups']>[number] => ({
  name,
  concurrency,
  active: c.active ?? c.running ?? 0,
  total,
  pending: c.pending ?? 0,
  running: c.running ?? 0,
  completed: c.completed ?? 0,
  failed: c.failed ?? 0,
  ...(c.held === undefined ? {} : { held: c.held }),
  ...(c.skipped === undefined ? {} : { skipped: c.skipped }),
});

const done = (startS: number, endS: number, extra: Partial<PatchJobStatus> = {}): Record<string, unknown> => ({
  phase: 'Completed',
  reason: 'Upgraded',
  message: 'node runs Talos v1.13.2',
  startTime: at(startS),
  completionTime: at(endS),
  cordonedTime: at(startS + 5),
  uncordonedTime: at(endS - 5),
  initialTalosVersion: 'v1.12.4',
  currentTalosVersion: 'v1.13.2',
  ...extra,
});

/** InProgress: the control plane done, two workers running (one drain blocked by a PDB, one rebooting), the next round in 4m10s. */
export const running = {
  plan: plan('rolling', -600, {
    phase: 'InProgress',
    reason: 'SlotsFull',
    message: 'group workers: both slot(s) busy',
    nextScheduleTime: at(250),
    startTime: at(-500),
    totalNodes: 5,
    completedNodes: 1,
    runningNodes: 2,
    pendingNodes: 2,
    failedNodes: 0,
    groups: [group('controlPlane', 1, { completed: 1 }), group('workers', 4, { running: 2, pending: 2 }, 2)],
  }),
  jobs: [
    job('rolling', 'cp-1', done(-500, -200)),
    job('rolling', 'worker-1', {
      phase: 'Draining',
      reason: 'DrainBlockedByPDB',
      message: 'eviction blocked by PodDisruptionBudget shop/web (0 disruptions allowed)',
      blockingPDB: 'shop/web',
      startTime: at(-90),
      phaseStartTime: at(-75),
      deadline: at(225),
      cordonedTime: at(-75),
      initialTalosVersion: 'v1.12.4',
    }),
    job('rolling', 'worker-2', {
      phase: 'Rebooting',
      reason: 'WaitingForReboot',
      message: 'waiting for worker-2 to boot Talos v1.13.2',
      startTime: at(-150),
      phaseStartTime: at(-20),
      deadline: at(580),
      cordonedTime: at(-140),
      initialTalosVersion: 'v1.12.4',
    }),
  ],
};

/** Paused by the Pause failure policy after worker-3 failed. */
export const paused = {
  plan: plan(
    'pausing',
    -500,
    {
      phase: 'Paused',
      reason: 'PausedByFailurePolicy',
      message: '1 node(s) failed (maxFailures 1): the plan is paused',
      startTime: at(-400),
      totalNodes: 4,
      completedNodes: 2,
      runningNodes: 0,
      pendingNodes: 1,
      failedNodes: 1,
      policyPause: { failures: 1, generation: 2, time: at(-60), reason: 'PausedByFailurePolicy' },
      groups: [group('workers', 4, { completed: 2, failed: 1, pending: 1 }, 2)],
    },
    { spec: { failurePolicy: { type: 'Pause' }, paused: true } },
  ),
  jobs: [
    job('pausing', 'worker-1', done(-400, -250)),
    job('pausing', 'worker-2', done(-400, -240)),
    job('pausing', 'worker-3', {
      phase: 'Failed',
      reason: 'UpgradeFailed',
      message: 'Talos refused the upgrade: error validating installer image',
      startTime: at(-230),
      completionTime: at(-60),
      cordonedTime: at(-225),
      uncordonedTime: at(-61),
      initialTalosVersion: 'v1.12.4',
    }),
  ],
};

/** Failed: the Halt policy stopped the plan when worker-2's reboot timed out (the node stayed cordoned). */
export const failed = {
  plan: plan('halting', -3000, {
    phase: 'Failed',
    reason: 'FailureBudgetExceeded',
    message: '1 node(s) failed, maxFailures 1: the plan stops',
    startTime: at(-2900),
    completionTime: at(-1000),
    totalNodes: 3,
    completedNodes: 1,
    runningNodes: 0,
    pendingNodes: 1,
    failedNodes: 1,
    groups: [group('workers', 3, { completed: 1, failed: 1, pending: 1 })],
  }),
  jobs: [
    job('halting', 'worker-1', done(-2900, -2500)),
    job('halting', 'worker-2', {
      phase: 'Failed',
      reason: 'RebootTimeout',
      message: 'worker-2 did not come back on Talos v1.13.2 within 10m',
      startTime: at(-2400),
      completionTime: at(-1000),
      cordonedTime: at(-2390),
      initialTalosVersion: 'v1.12.4',
      currentTalosVersion: 'v1.12.4',
      nodeLeftCordoned: true,
    }),
  ],
};

/** Waiting for a held node: the free workers are done, worker-2 is held, worker-4 skipped. */
export const held = {
  plan: plan('holding', -400, {
    phase: 'InProgress',
    reason: 'NodesHeld',
    message:
      'group workers waits for 1 held node(s): worker-2 (INC-4711: disk replacement); it goes on when the kangalpatch.ozalp.dk/hold annotation is removed, or set to "skip"',
    startTime: at(-300),
    totalNodes: 4,
    completedNodes: 2,
    runningNodes: 0,
    pendingNodes: 1,
    failedNodes: 0,
    heldNodes: 1,
    skippedNodes: 1,
    held: [{ node: 'worker-2', reason: 'INC-4711: disk replacement' }],
    skipped: [{ node: 'worker-4', reason: 'retiring this week' }],
    groups: [group('workers', 4, { completed: 2, pending: 1, held: 1, skipped: 1 }, 2)],
  }),
  jobs: [job('holding', 'worker-1', done(-300, -200)), job('holding', 'worker-3', done(-300, -190))],
};

/** Completed an hour ago: Talos and Kubernetes on the control plane and a worker. */
export const completed = {
  plan: plan(
    'finished',
    -7200,
    {
      phase: 'Completed',
      reason: 'Completed',
      message: 'all 2 node(s) done: 2 completed, 0 failed',
      startTime: at(-7000),
      completionTime: at(-3600),
      totalNodes: 2,
      completedNodes: 2,
      runningNodes: 0,
      pendingNodes: 0,
      failedNodes: 0,
      groups: [group('controlPlane', 1, { completed: 1 }), group('workers', 1, { completed: 1 })],
    },
    { spec: { target: { ...TARGET, kubernetesVersion: 'v1.36.3' } } },
  ),
  jobs: [
    job(
      'finished',
      'cp-1',
      done(-7000, -5800, { initialKubernetesVersion: 'v1.35.2', currentKubernetesVersion: 'v1.36.3' }),
      { ...TARGET, kubernetesVersion: 'v1.36.3' },
    ),
    job(
      'finished',
      'worker-1',
      done(-5700, -3600, { initialKubernetesVersion: 'v1.35.2', currentKubernetesVersion: 'v1.36.3' }),
      { ...TARGET, kubernetesVersion: 'v1.36.3' },
    ),
  ],
};

/** An auto-update template that proposed `production-v1-13-2` (running) and holds v1.13.3 back until it is old enough. */
export const template = {
  plan: plan(
    'production',
    -90_000,
    {
      phase: 'Watching',
      reason: 'Proposed',
      message: 'proposed v1.13.2',
      autoUpdate: {
        lastCheckTime: at(-300),
        nextCheckTime: at(3300),
        currentVersion: 'v1.12.4',
        latestVersion: 'v1.13.3',
        pendingVersion: 'v1.13.3',
        pendingHeldBy: 'MinReleaseAge',
        pendingEligibleTime: at(86_400),
        lastProposedVersion: 'v1.13.2',
        lastProposalURL: 'https://forge.example/acme/plans/pull/7',
        blockedBy: { name: 'production-v1-13-2', version: 'v1.13.2', phase: 'InProgress' },
      },
    },
    {
      spec: {
        target: { source: 'factory', installer: 'nocloud', autoUpdate: { enabled: true, minReleaseAge: '72h' } },
      },
    },
  ),
  child: plan(
    'production-v1-13-2',
    -7000,
    {
      phase: 'InProgress',
      reason: 'NodesScheduled',
      message: '1 node(s) scheduled',
      totalNodes: 5,
      completedNodes: 3,
      runningNodes: 1,
      pendingNodes: 1,
      failedNodes: 0,
      groups: [group('workers', 5, { completed: 3, running: 1, pending: 1 })],
    },
    { labels: { 'kangalpatch.ozalp.dk/auto-update-template': 'production' } },
  ),
};

const nodes: StatusNodeInput[] = [
  { name: 'cp-1', talosVersion: 'v1.13.2', kubeletVersion: 'v1.35.2', ready: true, unschedulable: false },
  { name: 'worker-1', talosVersion: 'v1.12.4', kubeletVersion: 'v1.35.2', ready: true, unschedulable: true },
  { name: 'worker-2', talosVersion: 'v1.12.4', kubeletVersion: 'v1.35.2', ready: false, unschedulable: true },
];

export const ALL = { running, paused, failed, held, completed } as const;

/** One of the five plans alone (with its jobs), as `kangal-patch status <plan>` reads it. */
export function only(p: { plan: StatusPlanInput; jobs: StatusJobInput[] }, withNodes = true): StatusInput {
  return { plans: [p.plan], jobs: p.jobs, nodes: withNodes ? nodes : undefined, names: [p.plan.name] };
}

/** The whole cluster: the five plans, the template and its child. */
export function cluster(names: string[] = []): StatusInput {
  const all = Object.values(ALL);
  return {
    plans: [...all.map((p) => p.plan), template.plan, template.child],
    jobs: all.flatMap((p) => p.jobs),
    nodes,
    names,
  };
}
