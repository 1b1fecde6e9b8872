// `npm run bench -- job`: PatchJobs through the real `kangal-patch run` process on the lab.
// Prints per-phase timings, the time each node was cordoned against what its drain, install and
// reboot inherently took (goal ≤ 1.1×), and Node Ready on target → job Completed (goal p99 ≤ 250 ms).
// Every time comes from the bench's own watches and the Talos simulator's call record.
import { startJobLab, type JobLab } from '../e2e/support/job-lab.js';
import { DEMO_TIMINGS } from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';

const LEGACY = 10;
const LIFECYCLE = 10;
/** Jobs run in waves of this many, like a group's concurrency (the lab and the controller share two cores). */
const WAVE = 4;
/** Sub-second simulated nodes by default; KANGAL_BENCH_TIMINGS=demo uses the demo's few-second reboots. */
const TIMINGS =
  process.env.KANGAL_BENCH_TIMINGS === 'demo'
    ? DEMO_TIMINGS
    : { upgradeMs: 400, pullMs: 300, installMs: 500, shutdownMs: 100, rebootMs: 800, bootMs: 300 };
/** Every node's kubelet posts its status this often (KANGAL_BENCH_STATUS_POST_MS; 0: never), racing the cordon and uncordon as on a busy cluster. */
const STATUS_POST_MS = Number(process.env.KANGAL_BENCH_STATUS_POST_MS ?? 1000);

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
};
const fmt = (xs: number[], unit = 'ms'): string =>
  `p50 ${pct(xs, 50).toFixed(0)} ${unit}, p99 ${pct(xs, 99).toFixed(0)} ${unit}, max ${Math.max(...xs).toFixed(0)} ${unit} (n=${xs.length})`;

/** Each Node PATCH that answered 409, and how long until a PATCH of that Node landed after it. */
function nodeWriteConflicts(exchanges: readonly { method: string; path: string; status: number; at: number }[]): {
  writes: number;
  conflicts: number;
  conflictToWrite: number[];
} {
  const patches = exchanges.filter((e) => e.method === 'PATCH' && /^\/api\/v1\/nodes\/[^/?]+(\?|$)/.test(e.path));
  const conflicted = patches.filter((e) => e.status === 409);
  const conflictToWrite = conflicted.flatMap((c) => {
    const landed = patches.find((e) => e.path === c.path && e.at > c.at && e.status < 300);
    return landed ? [landed.at - c.at] : [];
  });
  return { writes: patches.filter((e) => e.status < 300).length, conflicts: conflicted.length, conflictToWrite };
}

/** Each phase's duration (until the next phase began) of one job, added to `perPhase`. */
function addPhaseDurations(perPhase: Map<string, number[]>, p: Map<string, number>): void {
  const order = ['Pending', 'Draining', 'Upgrading', 'Rebooting', 'Completed'];
  for (let k = 0; k + 1 < order.length; k++) {
    const a = p.get(order[k] ?? '');
    const b = p.get(order[k + 1] ?? '');
    if (a !== undefined && b !== undefined)
      perPhase.set(order[k] ?? '', [...(perPhase.get(order[k] ?? '') ?? []), b - a]);
  }
}

/** What the observer saw of a node (cordon, Ready, evictions) and the simulator's accepted calls that upgraded it. */
function nodeTimeline(lab: JobLab, node: string) {
  const ev = lab.observer.of(node);
  const calls = lab.talos.node(node).calls.filter((c) => c.result === 'ok');
  return {
    cordonAt: ev.find((e) => e.kind === 'cordoned')?.at,
    uncordonAt: ev.find((e) => e.kind === 'uncordoned')?.at,
    readyAt: ev.filter((e) => e.kind === 'ready').at(-1)?.at,
    deleting: ev.filter((e) => e.kind === 'podDeleting').map((e) => e.at),
    gone: ev.filter((e) => e.kind === 'podGone').map((e) => e.at),
    legacy: calls.find((c) => c.method === 'MachineService.Upgrade'),
    install: calls.find((c) => c.method === 'LifecycleService.Upgrade'),
    reboot: calls.find((c) => c.method === 'MachineService.Reboot'),
  };
}
type NodeTimeline = ReturnType<typeof nodeTimeline>;

/** The upgrade's inherent time: legacy, from its call to Ready; lifecycle, the install call, then from the reboot to Ready. */
function workMs({ legacy, install, reboot }: NodeTimeline, readyAt: number): number {
  return legacy
    ? readyAt - legacy.at
    : (install?.endedAt ?? 0) - (install?.at ?? 0) + (readyAt - (reboot?.at ?? readyAt));
}

/** From the last pod gone (or the cordon, with no pod to evict) to the upgrade call. */
function drainedToUpgradeMs({ legacy, install, gone }: NodeTimeline, cordonAt: number): number {
  return ((legacy ?? install)?.at ?? 0) - (gone.length > 0 ? Math.max(...gone) : cordonAt);
}

export async function run(): Promise<void> {
  const workers = LEGACY + LIFECYCLE;
  const lifecycle = Array.from({ length: LIFECYCLE }, (_, i) => `worker-${LEGACY + i + 1}`);
  const lab = await startJobLab({
    fleet: { nodes: workers + 1, controlPlanes: 1, talosVersion: 'v1.12.4' },
    talosVersions: Object.fromEntries(lifecycle.map((n) => [n, 'v1.13.1'])),
    timings: TIMINGS,
    rescheduleDelayMs: 100,
    ...(STATUS_POST_MS > 0 ? { statusPostMs: STATUS_POST_MS } : {}),
    // The controller's requests go through the interposer, which times each conflict on a Node.
    interposer: true,
    workloads: [
      { namespace: 'app', name: 'web', kind: 'replicaset', replicas: workers * 2, pdb: { maxUnavailable: '50%' } },
    ],
  });
  try {
    const phaseTimes = (job: string): Map<string, number> =>
      new Map(
        lab.observer.events
          .filter((e) => e.kind === 'jobPhase' && e.detail.startsWith(`${job} `))
          .map((e) => [e.detail.split(' ')[1] ?? '', e.at]),
      );
    const controller = lab.startController({ args: ['--log-level', 'info'] });
    await waitFor(() => controller.logs().some((l) => String(l.msg).startsWith('leading')) || undefined, {
      timeoutMs: 60_000,
      description: 'controller leading',
    });

    const nodes = Array.from({ length: workers }, (_, i) => `worker-${i + 1}`);
    const jobs: string[] = [];
    for (let w = 0; w < nodes.length; w += WAVE) {
      const wave = await Promise.all(
        nodes.slice(w, w + WAVE).map((node, k) =>
          lab.createJob({
            plan: `bench-${w + k}`,
            node,
            target: { talosVersion: w + k < LEGACY ? 'v1.13.2' : 'v1.14.0' },
          }),
        ),
      );
      jobs.push(...wave);
      await waitFor(
        () => wave.every((j) => phaseTimes(j).has('Completed') || phaseTimes(j).has('Failed')) || undefined,
        { timeoutMs: 300_000, description: 'wave finished' },
      );
      await waitFor(
        () => nodes.slice(w, w + WAVE).every((n) => lab.observer.node(n)?.unschedulable === false) || undefined,
        { timeoutMs: 30_000, description: 'wave uncordoned' },
      );
    }
    await controller.stop();

    const failed = jobs.filter((j) => !phaseTimes(j).has('Completed'));
    if (failed.length > 0) console.log(`FAILED jobs: ${failed.join(', ')}`);
    const perPhase = new Map<string, number[]>();
    const cordoned: number[] = [];
    const inherent: number[] = [];
    const ratio: number[] = [];
    const readyToCompleted: number[] = [];
    const gaps = {
      cordonToEviction: [] as number[],
      drainedToUpgrade: [] as number[],
      readyToUncordon: [] as number[],
    };
    nodes.forEach((node, i) => {
      const p = phaseTimes(jobs[i] ?? '');
      addPhaseDurations(perPhase, p);
      const t = nodeTimeline(lab, node);
      const { cordonAt, uncordonAt, readyAt, deleting, gone } = t;
      if (cordonAt === undefined || uncordonAt === undefined || readyAt === undefined) return;
      const drain = deleting.length > 0 ? Math.max(...gone) - Math.min(...deleting) : 0;
      const work = workMs(t, readyAt);
      cordoned.push(uncordonAt - cordonAt);
      if (deleting.length > 0) gaps.cordonToEviction.push(Math.min(...deleting) - cordonAt);
      gaps.drainedToUpgrade.push(drainedToUpgradeMs(t, cordonAt));
      gaps.readyToUncordon.push(uncordonAt - readyAt);
      inherent.push(drain + work);
      ratio.push((uncordonAt - cordonAt) / (drain + work));
      const completedAt = p.get('Completed');
      if (completedAt !== undefined) readyToCompleted.push(completedAt - readyAt);
    });
    console.log(
      `${jobs.length} jobs in waves of ${WAVE} (${LEGACY} legacy 1.12→1.13, ${LIFECYCLE} lifecycle 1.13→1.14), simulator timings ${JSON.stringify(TIMINGS)}, kubelet status posts ${STATUS_POST_MS > 0 ? `every ${STATUS_POST_MS} ms` : 'off'}`,
    );
    for (const [phase, xs] of perPhase) console.log(`phase ${phase.padEnd(10)} ${fmt(xs)}`);
    console.log(`time cordoned          ${fmt(cordoned)}`);
    console.log(`drain+install+reboot   ${fmt(inherent)} (inherent: pods terminating, installer, reboot until Ready)`);
    console.log(
      `cordoned / inherent    p50 ${pct(ratio, 50).toFixed(3)}×, p99 ${pct(ratio, 99).toFixed(3)}× (goal ≤ 1.1×)`,
    );
    console.log(
      `overhead: cordon → first eviction ${fmt(gaps.cordonToEviction)}; last pod gone → upgrade call ${fmt(gaps.drainedToUpgrade)}; Ready → uncordon ${fmt(gaps.readyToUncordon)}`,
    );
    console.log(`Node Ready → Completed ${fmt(readyToCompleted)} (goal p99 ≤ 250 ms)`);
    const { writes, conflicts, conflictToWrite } = nodeWriteConflicts(lab.interposer?.exchanges ?? []);
    console.log(
      `Node writes (cordon/uncordon) ${writes}, of which conflicted ${conflicts}; conflict → write landed ${conflictToWrite.length > 0 ? fmt(conflictToWrite) : 'n/a'}`,
    );
  } finally {
    await lab.stop();
  }
}
