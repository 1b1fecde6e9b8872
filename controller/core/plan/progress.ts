// Where a plan stands: per group and in total, counted from its PatchJobs and slot Leases.
import type { GroupStatus } from '../../../schemas/patchplan.js';
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
  /** Nodes of each group without a PatchJob, in scheduling order. */
  pendingNodes: Map<string, string[]>;
}

export function progressOf(selection: Selection, jobs: readonly PlanJobFacts[], leases: readonly PlanLeaseFacts[]): Progress {
  const jobOf = new Map(jobs.map((j) => [j.nodeName, j]));
  const pendingNodes = new Map<string, string[]>();
  let current: string | undefined;
  const groups = selection.groups.map((g): GroupStatus => {
    const pending: string[] = [];
    let completed = 0;
    let failed = 0;
    for (const n of g.nodes) {
      const phase = jobOf.get(n)?.phase;
      if (!jobOf.has(n)) pending.push(n);
      else if (phase === 'Completed') completed++;
      else if (phase === 'Failed') failed++;
    }
    pendingNodes.set(g.name, pending);
    const running = g.nodes.length - pending.length - completed - failed;
    if (current === undefined && completed + failed < g.nodes.length) current = g.name;
    return { name: g.name, concurrency: g.concurrency, active: 0, total: g.nodes.length, pending: pending.length, running, completed, failed };
  });
  const sum = (k: 'total' | 'pending' | 'running' | 'completed' | 'failed'): number => groups.reduce((a, g) => a + g[k], 0);
  return withLeases({ groups, total: sum('total'), pending: sum('pending'), running: sum('running'), completed: sum('completed'), failed: sum('failed'), current, pendingNodes }, leases);
}

/** The same progress with each group's slots counted from these Leases (the jobs' counts do not depend on them). */
export function withLeases(p: Progress, leases: readonly PlanLeaseFacts[]): Progress {
  return { ...p, groups: p.groups.map((g) => ({ ...g, active: leases.filter((l) => l.group === g.name).length })) };
}
