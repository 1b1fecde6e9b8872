// `npm run bench -- rollout`: a 60-node fleet in 4 groups with concurrency 1–4 through the real
// `kangal-patch run` process, delayBetweenNodes 0s. Prints the makespan against the physical limit
// Σ_groups ceil(n/c)·T (T = one node's upgrade time measured in the same run; goal ≤ 1.03) and
// slot freed → next PatchJob created (goal p99 ≤ 250 ms), from the observer's own watches. A slot
// freed at a group's end while its round's other nodes still run is not counted there: nothing may
// start until the group is done (that wait is in the makespan, set by the slowest node of the round).
import { startJobLab } from '../e2e/support/job-lab.js';
import { labPlan } from '../e2e/support/plans.js';
import { waitFor } from '../lab/wait.js';

const GROUPS = [
  { name: 'g1', nodes: 6, concurrency: 1 },
  { name: 'g2', nodes: 12, concurrency: 2 },
  { name: 'g3', nodes: 18, concurrency: 3 },
  { name: 'g4', nodes: 24, concurrency: 4 },
];
/** Node upgrade time T ≈ upgrade + shutdown + reboot + boot of the legacy flow: about 5 s. */
const TIMINGS = { upgradeMs: 1_500, shutdownMs: 500, rebootMs: 2_000, bootMs: 1_000, pullMs: 0, installMs: 0 };

const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)] ?? NaN;

/** For each freed slot (a Lease deleted), the time to the first of `next` at or after it; none after the last (the rollout ended). */
function gapsAfter(freed: readonly { at: number }[], next: readonly { at: number }[]): number[] {
  return freed.flatMap((d) => {
    const n = next.find((c) => c.at >= d.at);
    return n !== undefined && n.at - d.at < 60_000 ? [n.at - d.at] : [];
  });
}

interface LeaseEvent {
  at: number;
  node: string;
  detail: string;
}

/** The Lease deletions after which the plan could start a node (see the call). */
function refillableSlots(
  created: readonly LeaseEvent[],
  deleted: readonly LeaseEvent[],
  groupOf: (holder: string) => string,
): LeaseEvent[] {
  const all = [...created.map((e) => ({ e, made: true })), ...deleted.map((e) => ({ e, made: false }))].sort(
    (a, b) => a.e.at - b.e.at,
  );
  const live = new Map<string, number>();
  const out: LeaseEvent[] = [];
  for (const { e, made } of all) {
    const g = groupOf(e.node);
    live.set(g, (live.get(g) ?? 0) + (made ? 1 : -1));
    if (made) continue;
    const next = created.find((c) => c.at >= e.at);
    if (live.get(g) === 0 || (next !== undefined && groupOf(next.node) === g)) out.push(e);
  }
  return out;
}

export async function run(): Promise<void> {
  const total = GROUPS.reduce((n, g) => n + g.nodes, 0);
  const labels: Record<string, Record<string, string>> = {};
  let i = 0;
  for (const g of GROUPS) for (let k = 0; k < g.nodes; k++) labels[`worker-${++i}`] = { 'bench/group': g.name };
  const lab = await startJobLab({
    fleet: { nodes: total + 1, controlPlanes: 1, talosVersion: 'v1.12.4' },
    labels,
    timings: TIMINGS,
    images: ['siderolabs/installer:v1.13.2'],
  });
  try {
    const controller = lab.startController({ args: ['--log-level', 'info'] });
    await waitFor(() => controller.logs().some((l) => String(l.msg).startsWith('leading')) || undefined, {
      timeoutMs: 60_000,
      description: 'controller leading',
    });
    const groups = Object.fromEntries(
      GROUPS.map((g) => [g.name, { selector: { matchLabels: { 'bench/group': g.name } }, concurrency: g.concurrency }]),
    );
    await lab.applyPlan(
      labPlan(
        { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: 'bench' }, spec: {} },
        lab.talos.endpoint,
        {
          target: { talosVersion: 'v1.13.2' },
          groups,
          strategy: { order: GROUPS.map((g) => g.name) },
          nodeSelector: { matchExpressions: [{ key: 'bench/group', operator: 'Exists' }] },
        },
      ),
    );
    await lab.waitForPlan('bench', 'Completed', (s) => s.phase === 'Completed' || s.phase === 'Failed', 30 * 60_000);
    await controller.stop();

    const ev = lab.observer.events;
    const jobStarts = ev.filter((e) => e.kind === 'jobPhase' && e.detail.endsWith(' Pending'));
    const jobEnds = ev.filter((e) => e.kind === 'jobPhase' && /(Completed|Failed)$/.test(e.detail));
    const leaseCreated = ev.filter((e) => e.kind === 'leaseCreated');
    const leaseDeleted = ev.filter((e) => e.kind === 'leaseDeleted');
    const start = Math.min(...leaseCreated.map((e) => e.at));
    const end = Math.max(...jobEnds.map((e) => e.at));
    // T: a node's time from its PatchJob's creation to Completed, the median over the run.
    const durations = jobEnds.map((e) => e.at - (jobStarts.find((s) => s.node === e.node)?.at ?? e.at));
    const T = pct(durations, 50);
    const limit = GROUPS.reduce((sum, g) => sum + Math.ceil(g.nodes / g.concurrency) * T, 0);
    // The fleet prefixes node names and the Lease holder is the job (bench-worker-7); the labels were given by worker-7.
    const groupOf = (node: string | undefined): string =>
      labels[/worker-\d+$/.exec(node ?? '')?.[0] ?? '']?.['bench/group'] ?? '?';
    // A slot the plan can refill: its group still has a node to start (the next Lease is of the same
    // group), or it was the group's last Lease (the next group may start). Not one freed at a group's
    // end while the other nodes of its last round still run: nothing may start then, by design.
    const refillable = refillableSlots(leaseCreated, leaseDeleted, groupOf);
    // A slot freed (its Lease deleted) → the next Lease of the same plan created.
    const gaps = gapsAfter(refillable, leaseCreated);
    const gapsAll = gapsAfter(leaseDeleted, leaseCreated);
    // … → the next PatchJob created (what frees a node to start), and → that job's first phase (Pending: the job reconciler's first pass).
    const jobGaps = gapsAfter(
      refillable,
      ev.filter((e) => e.kind === 'jobCreated'),
    );
    const pendingGaps = gapsAfter(refillable, jobStarts);
    // A node's own slot Lease created → its PatchJob created: the plan passes between the two.
    const jobCreated = new Map(ev.filter((e) => e.kind === 'jobCreated').map((e) => [e.detail, e.at]));
    const leaseToJob = leaseCreated.flatMap((l) => {
      const at = jobCreated.get(l.node);
      return at === undefined || at < l.at ? [] : [at - l.at];
    });
    const makespan = end - start;
    console.log(
      `${total} nodes in ${GROUPS.length} groups (concurrency ${GROUPS.map((g) => g.concurrency).join('/')}), T = ${T} ms (median node time), ${durations.length} nodes done`,
    );
    console.log(
      `makespan ${(makespan / 1000).toFixed(1)} s, physical limit Σ ceil(n/c)·T = ${(limit / 1000).toFixed(1)} s, ratio ${(makespan / limit).toFixed(3)} (goal ≤ 1.03)`,
    );
    console.log(
      `slot freed → next Lease: p50 ${pct(gaps, 50)} ms, p99 ${pct(gaps, 99)} ms, max ${Math.max(...gaps)} ms (n=${gaps.length}; every freed slot, a round's peers at a group's end included: p99 ${pct(gapsAll, 99)} ms, n=${gapsAll.length})`,
    );
    console.log(
      `slot freed → next PatchJob created: p50 ${pct(jobGaps, 50)} ms, p99 ${pct(jobGaps, 99)} ms, max ${Math.max(...jobGaps)} ms (n=${jobGaps.length}; goal p99 ≤ 250 ms)`,
    );
    console.log(
      `a node's slot Lease → its PatchJob created: p50 ${pct(leaseToJob, 50)} ms, p99 ${pct(leaseToJob, 99)} ms, max ${Math.max(...leaseToJob)} ms (n=${leaseToJob.length})`,
    );
    console.log(
      `slot freed → next PatchJob Pending: p50 ${pct(pendingGaps, 50)} ms, p99 ${pct(pendingGaps, 99)} ms, max ${Math.max(...pendingGaps)} ms (n=${pendingGaps.length})`,
    );
    // The three slowest refillable turnovers, named.
    const slowest = refillable
      .map((d) => ({ freed: d, next: leaseCreated.find((c) => c.at >= d.at) }))
      .filter((x) => x.next !== undefined && x.next.at - x.freed.at < 60_000)
      .sort((a, b) => (b.next?.at ?? 0) - b.freed.at - ((a.next?.at ?? 0) - a.freed.at))
      .slice(0, 3);
    for (const x of slowest)
      console.log(
        `  slow turnover: ${x.freed.node} (${groupOf(x.freed.node)}) freed → ${x.next?.node ?? '?'} (${groupOf(x.next?.node)}) Lease in ${(x.next?.at ?? 0) - x.freed.at} ms`,
      );
  } finally {
    await lab.stop();
  }
}
