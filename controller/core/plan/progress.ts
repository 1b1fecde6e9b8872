// Where a plan stands: per group and in total, counted from its PatchJobs and slot Leases.
import type { GroupStatus } from '../../../schemas/patchplan.js';
import type { NodeHold } from './holds.js';
import type { Selection } from './selection.js';
import type { PlanJobFacts, PlanJobPhase, PlanLeaseFacts } from './types.js';

export const isFinishedPhase = (phase: string | undefined): boolean => phase === 'Completed' || phase === 'Failed';

/** A PatchJob's status.phase as its plan reads it (PlanJobPhase). */
export function planJobPhase(phase: string | undefined): PlanJobPhase | undefined {
  if (phase === undefined || phase === 'Pending' || phase === 'Completed' || phase === 'Failed') return phase;
  return 'Running';
}

export interface Progress {
  groups: GroupStatus[];
  total: number;
  pending: number;
  running: number;
  completed: number;
  failed: number;
  /** First group in order with a node not finished; undefined when every claimed node is done. */
  current: string | undefined;
  /** Nodes of each group without a PatchJob, in scheduling order (held and skipped nodes are not among them). */
  pendingNodes: Map<string, string[]>;
  /** Nodes without a PatchJob whose Node carries the hold annotation, per group in scheduling order: not scheduled, and their group waits. */
  heldNodes: Map<string, { node: string; hold: NodeHold }[]>;
  /** Nodes without a PatchJob whose hold says skip: done without a job. */
  skippedNodes: { node: string; hold: NodeHold }[];
  held: number;
  skipped: number;
}

/** `holds`: the nodes whose Node carries the hold annotation (holds.ts); a hold counts only for a node without a PatchJob. */
export function progressOf(
  selection: Selection,
  jobs: readonly PlanJobFacts[],
  leases: readonly PlanLeaseFacts[],
  holds: ReadonlyMap<string, NodeHold> = new Map(),
): Progress {
  const jobOf = new Map(jobs.map((j) => [j.nodeName, j]));
  const pendingNodes = new Map<string, string[]>();
  const heldNodes = new Map<string, { node: string; hold: NodeHold }[]>();
  const skippedNodes: { node: string; hold: NodeHold }[] = [];
  let current: string | undefined;
  const groups = selection.groups.map((g): GroupStatus => {
    const tally = tallyGroup(g.nodes, jobOf, holds);
    const { pending, held, completed, failed } = tally;
    const skipped = tally.skipped.length;
    skippedNodes.push(...tally.skipped);
    pendingNodes.set(g.name, pending);
    heldNodes.set(g.name, held);
    const running = g.nodes.length - pending.length - held.length - skipped - completed - failed;
    if (current === undefined && completed + failed + skipped < g.nodes.length) current = g.name;
    const counts = { ...(held.length > 0 ? { held: held.length } : {}), ...(skipped > 0 ? { skipped } : {}) };
    return {
      name: g.name,
      concurrency: g.concurrency,
      active: 0,
      total: g.nodes.length,
      pending: pending.length,
      running,
      completed,
      failed,
      ...counts,
    };
  });
  const sum = (k: 'total' | 'pending' | 'running' | 'completed' | 'failed' | 'held' | 'skipped'): number =>
    groups.reduce((a, g) => a + (g[k] ?? 0), 0);
  return withLeases(
    {
      groups,
      total: sum('total'),
      pending: sum('pending'),
      running: sum('running'),
      completed: sum('completed'),
      failed: sum('failed'),
      held: sum('held'),
      skipped: sum('skipped'),
      current,
      pendingNodes,
      heldNodes,
      skippedNodes,
    },
    leases,
  );
}

/** One group's nodes by where they stand: without a PatchJob pending, held or skipped (in order); with one, completed or failed counted. */
interface GroupTally {
  pending: string[];
  held: { node: string; hold: NodeHold }[];
  skipped: { node: string; hold: NodeHold }[];
  completed: number;
  failed: number;
}

function tallyGroup(
  nodes: readonly string[],
  jobOf: ReadonlyMap<string, PlanJobFacts>,
  holds: ReadonlyMap<string, NodeHold>,
): GroupTally {
  const t: GroupTally = { pending: [], held: [], skipped: [], completed: 0, failed: 0 };
  for (const n of nodes) {
    const phase = jobOf.get(n)?.phase;
    const hold = jobOf.has(n) ? undefined : holds.get(n);
    if (hold?.kind === 'skip') t.skipped.push({ node: n, hold });
    else if (hold) t.held.push({ node: n, hold });
    else if (!jobOf.has(n)) t.pending.push(n);
    else if (phase === 'Completed') t.completed++;
    else if (phase === 'Failed') t.failed++;
  }
  return t;
}

/** The same progress with each group's slots counted from these Leases (the jobs' counts do not depend on them). */
export function withLeases(p: Progress, leases: readonly PlanLeaseFacts[]): Progress {
  return { ...p, groups: p.groups.map((g) => ({ ...g, active: leases.filter((l) => l.group === g.name).length })) };
}
