// `npm run bench -- prepull`: the installer pre-pull (spec.prePull) against the serial limit, through
// the real `kangal-patch run` process. The 60-node fleet of rollout.bench.ts (4 groups of 6/12/18/24
// nodes, concurrency 1-4: six rounds each), delayBetweenNodes 0s, the image pull about 40 % of a node's time T. Three rollouts:
// the lifecycle flow (Talos >= 1.13) with pre-pull on, the same with it off, and the legacy flow
// (< 1.13, where the node pulls inside MachineService.Upgrade and nothing can be pre-pulled). For each:
// makespan / Σ ceil(n/c)·T, where T is the median time (PatchJob Pending → Completed) of the run's
// nodes that downloaded their installer themselves, so T includes the pull. Goal with pre-pull: ≤ 0.75.
// The pre-pull run is also put against the T of the run without it (same lab, run just before), as
// the first round of each group (the only nodes that download in that run) is a small sample.
// The first round of a group cannot be pre-pulled (never a node of a group whose turn has not come),
// so the best this fleet allows is (4·T + 20·T')/(24·T), T' a pre-pulled node's time.
import { startJobLab, type JobLab } from '../e2e/support/job-lab.js';
import { labPlan } from '../e2e/support/plans.js';
import { waitFor } from '../lab/wait.js';
import { recordResult } from './results.js';

/** The fleet of rollout.bench.ts (the 60-node serial-limit bench): six rounds per group. */
const GROUPS = [
  { name: 'g1', nodes: 6, concurrency: 1 },
  { name: 'g2', nodes: 12, concurrency: 2 },
  { name: 'g3', nodes: 18, concurrency: 3 },
  { name: 'g4', nodes: 24, concurrency: 4 },
];
const PULL_MS = 2_800;
/** Lifecycle: pull, install, reboot; legacy: the node pulls and installs inside `upgradeMs`. */
const TIMINGS = {
  pullMs: PULL_MS,
  installMs: 300,
  upgradeMs: PULL_MS + 300,
  shutdownMs: 200,
  rebootMs: 1_800,
  bootMs: 700,
};

const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)] ?? NaN;
const rounds = GROUPS.reduce((sum, g) => sum + Math.ceil(g.nodes / g.concurrency), 0);

interface Result {
  name: string;
  makespanMs: number;
  /** T: median node time of the nodes that downloaded their own installer. */
  tMs: number;
  /** Median node time of the nodes whose installer was pre-pulled (NaN when none). */
  tPrePulledMs: number;
  prePulled: number;
  /** Median node time of each group's first round (the nodes that download in both runs). */
  tFirstRoundMs: number;
  ratio: number;
  /** Between rounds, p50/p99 ms: job Completed → its slot Lease deleted → the next Lease created → that job Pending. */
  between: { completedToFreed: [number, number]; freedToLease: [number, number]; leaseToPending: [number, number] };
}

async function rollout(lab: JobLab, plan: string, talosVersion: string, prePull: boolean): Promise<Result> {
  const applied = Date.now();
  await lab.applyPlan(
    labPlan(
      { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: plan }, spec: {} },
      lab.talos.endpoint,
      {
        target: { talosVersion },
        prePull,
        groups: Object.fromEntries(
          GROUPS.map((g) => [
            g.name,
            { selector: { matchLabels: { 'bench/group': g.name } }, concurrency: g.concurrency },
          ]),
        ),
        strategy: { order: GROUPS.map((g) => g.name) },
        nodeSelector: { matchExpressions: [{ key: 'bench/group', operator: 'Exists' }] },
      },
    ),
  );
  const status = await lab.waitForPlan(
    plan,
    'Completed',
    (s) => s.phase === 'Completed' || s.phase === 'Failed',
    30 * 60_000,
  );
  if (status.phase !== 'Completed') throw new Error(`${plan} ended ${String(status.phase)}: ${String(status.message)}`);
  const mine = lab.observer.events.filter(
    (e) =>
      e.at >= applied &&
      (e.kind === 'jobPhase'
        ? e.detail.startsWith(`${plan}-`)
        : e.kind === 'leaseCreated' && e.node.startsWith(`${plan}-`)),
  );
  const starts = mine.filter((e) => e.kind === 'jobPhase' && e.detail.endsWith(' Pending'));
  const ends = mine.filter((e) => e.kind === 'jobPhase' && /(Completed|Failed)$/.test(e.detail));
  const start = Math.min(...mine.filter((e) => e.kind === 'leaseCreated').map((e) => e.at));
  const makespanMs = Math.max(...ends.map((e) => e.at)) - start;
  const own: number[] = [];
  const pre: number[] = [];
  const firstRound = GROUPS.flatMap((g) =>
    starts
      .filter((e) => GROUP_OF.get(e.node) === g.name)
      .sort((a, b) => a.at - b.at)
      .slice(0, g.concurrency)
      .map((e) => e.node),
  );
  const first: number[] = [];
  for (const e of ends) {
    const ms = e.at - (starts.find((s) => s.node === e.node)?.at ?? e.at);
    const job = await lab.job(`${plan}-${e.node}`);
    (job?.status.installerAlreadyPulled === true ? pre : own).push(ms);
    if (firstRound.includes(e.node)) first.push(ms);
  }
  const tMs = pct(own, 50);
  return {
    name: plan,
    makespanMs,
    tMs,
    tPrePulledMs: pre.length > 0 ? pct(pre, 50) : NaN,
    prePulled: pre.length,
    tFirstRoundMs: pct(first, 50),
    ratio: makespanMs / (rounds * tMs),
    between: betweenRounds(lab, plan, applied),
  };
}

/** Where the time between a finished job and the next one goes, from the observer's watches. */
function betweenRounds(lab: JobLab, plan: string, applied: number): Result['between'] {
  const ev = lab.observer.events.filter((e) => e.at >= applied);
  const phaseAt = (job: string, phase: string): number | undefined =>
    ev.find((e) => e.kind === 'jobPhase' && e.detail === `${job} ${phase}`)?.at;
  const created = ev.filter((e) => e.kind === 'leaseCreated' && e.node.startsWith(`${plan}-`));
  const a: number[] = [];
  const b: number[] = [];
  const c: number[] = [];
  for (const d of ev.filter((e) => e.kind === 'leaseDeleted' && e.node.startsWith(`${plan}-`))) {
    const completed = phaseAt(d.node, 'Completed');
    const next = created.find((x) => x.at >= d.at);
    const pending = next && phaseAt(next.node, 'Pending');
    if (completed === undefined || !next || pending === undefined) continue;
    a.push(d.at - completed);
    b.push(next.at - d.at);
    c.push(pending - next.at);
  }
  const p = (xs: number[]): [number, number] => [pct(xs, 50), pct(xs, 99)];
  return { completedToFreed: p(a), freedToLease: p(b), leaseToPending: p(c) };
}

/** worker-N → its group, in GROUPS order. */
const GROUP_OF = new Map<string, string>(
  GROUPS.flatMap((g, gi) =>
    Array.from(
      { length: g.nodes },
      (_, k) => [`worker-${GROUPS.slice(0, gi).reduce((n, x) => n + x.nodes, 0) + k + 1}`, g.name] as const,
    ),
  ),
);

async function fleetLab(talosVersion: string, images: string[]): Promise<JobLab> {
  const total = GROUPS.reduce((n, g) => n + g.nodes, 0);
  const labels = Object.fromEntries([...GROUP_OF].map(([node, group]) => [node, { 'bench/group': group }]));
  return startJobLab({ fleet: { nodes: total + 1, controlPlanes: 1, talosVersion }, labels, timings: TIMINGS, images });
}

async function withController<T>(lab: JobLab, fn: () => Promise<T>): Promise<T> {
  const controller = lab.startController({ args: ['--log-level', 'info'] });
  await waitFor(() => controller.logs().some((l) => String(l.msg).startsWith('leading')) || undefined, {
    timeoutMs: 60_000,
    description: 'controller leading',
  });
  try {
    return await fn();
  } finally {
    await controller.stop();
  }
}

function print(r: Result): void {
  const s = (ms: number): string => (ms / 1000).toFixed(1);
  const pulled = r.prePulled > 0 ? `, ${r.prePulled} nodes pre-pulled (median ${s(r.tPrePulledMs)} s)` : '';
  const b = r.between;
  const pp = ([p50, p99]: [number, number]): string => `${p50}/${p99}`;
  const gaps = `between rounds p50/p99 ms: Completed → slot freed ${pp(b.completedToFreed)}, freed → next Lease ${pp(b.freedToLease)}, Lease → job Pending ${pp(b.leaseToPending)}`;
  console.log(
    `${r.name.padEnd(19)} makespan ${s(r.makespanMs)} s, T ${s(r.tMs)} s (pull ${Math.round((100 * PULL_MS) / r.tMs)} % of T; first rounds ${s(r.tFirstRoundMs)} s)${pulled}, limit Σ ceil(n/c)·T = ${rounds} × T = ${s(rounds * r.tMs)} s, ratio ${r.ratio.toFixed(3)}\n  ${gaps}`,
  );
}

export async function run(): Promise<void> {
  const results: Result[] = [];
  console.log(
    `${GROUPS.reduce((n, g) => n + g.nodes, 0)} nodes in ${GROUPS.length} groups (concurrency ${GROUPS.map((g) => g.concurrency).join('/')}), ${rounds} rounds, pull ${PULL_MS} ms`,
  );
  const lifecycle = await fleetLab('v1.13.2', ['siderolabs/installer:v1.14.0', 'siderolabs/installer:v1.14.1']);
  try {
    await withController(lifecycle, async () => {
      results.push(await rollout(lifecycle, 'lifecycle-noprepull', 'v1.14.0', false));
      results.push(await rollout(lifecycle, 'lifecycle-prepull', 'v1.14.1', true));
    });
  } finally {
    await lifecycle.stop();
  }
  const legacy = await fleetLab('v1.12.4', ['siderolabs/installer:v1.13.2']);
  try {
    await withController(legacy, async () => {
      results.push(await rollout(legacy, 'legacy', 'v1.13.2', true));
    });
  } finally {
    await legacy.stop();
  }
  for (const r of results) print(r);
  const [off, on] = results;
  if (!off || !on) return;
  const cross = on.makespanMs / (rounds * off.tMs);
  const best = (GROUPS.length * on.tMs + (rounds - GROUPS.length) * on.tPrePulledMs) / (rounds * on.tMs);
  console.log(
    `pre-pull on: a round without its pull takes ${(on.tPrePulledMs / 1000).toFixed(1)} s of T ${(on.tMs / 1000).toFixed(1)} s; with no time between rounds this fleet would reach ${best.toFixed(3)} (first rounds of groups pull for themselves)`,
  );
  console.log(
    `results: ${recordResult('prepull', { groups: GROUPS, pullMs: PULL_MS, timings: TIMINGS, runs: results, crossRatio: cross, bestRatio: best })}`,
  );
  console.log(
    `pre-pull on: ratio ${on.ratio.toFixed(3)} with its own T, ${cross.toFixed(3)} with the T of the run without pre-pull (goal ≤ 0.75: ${Math.max(on.ratio, cross) <= 0.75 ? 'met' : 'missed'}); makespan on/off ${(on.makespanMs / off.makespanMs).toFixed(3)}`,
  );
}
