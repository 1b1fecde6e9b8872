// What the cluster-state gauges report, computed from cached views (pure: time is an argument).
// Called at scrape time, once per scrape: O(nodes + jobs + plans), never per reconcile.
import { ConditionSupportMatrixCurrent } from '../../schemas/api.js';
import { PatchJobPhase } from '../../schemas/patchjob.js';
import { PatchPlanPhase } from '../../schemas/patchplan.js';
import { EtcdWaitStage } from '../../schemas/etcd.js';
import { epoch } from '../core/time.js';
import type { JobView, NodeView, PlanView } from '../kube/views.js';

/** The node_phase value of a node no PatchJob is about. */
const NODE_IDLE = 'Idle';
export const NODE_PHASES: readonly string[] = [NODE_IDLE, ...Object.values(PatchJobPhase)];
const PLAN_PHASES: readonly string[] = Object.values(PatchPlanPhase);
const TERMINAL: ReadonlySet<string> = new Set([PatchJobPhase.Completed, PatchJobPhase.Failed]);

export interface PlanPhaseSample {
  plan: string;
  phase: string;
  value: 0 | 1;
}

/** Every plan × every phase: 1 for the plan's current phase (Pending before its first status), 0 for the others. */
export function planPhaseSamples(plans: readonly PlanView[]): PlanPhaseSample[] {
  return plans.flatMap((p) => {
    const current = p.status.phase ?? PatchPlanPhase.Pending;
    return PLAN_PHASES.map((phase) => ({ plan: p.name, phase, value: phase === current ? 1 : 0 }) as const);
  });
}

/**
 * Nodes counted by the phase of the PatchJob that is about them: the running one, else the newest
 * finished one; `Idle` without any. Every phase is present (0 when no node is in it).
 */
export function nodePhaseCounts(nodes: readonly NodeView[], jobs: readonly JobView[]): Map<string, number> {
  const relevant = new Map<string, JobView>();
  for (const j of jobs) {
    const node = j.spec?.nodeName;
    if (node === undefined) continue;
    const held = relevant.get(node);
    if (held === undefined || outranks(j, held)) relevant.set(node, j);
  }
  const counts = new Map(NODE_PHASES.map((p) => [p, 0]));
  for (const n of nodes) {
    const job = relevant.get(n.name);
    const phase = job === undefined ? NODE_IDLE : (job.status.phase ?? PatchJobPhase.Pending);
    counts.set(phase, (counts.get(phase) ?? 0) + 1);
  }
  return counts;
}

function outranks(a: JobView, b: JobView): boolean {
  const aRunning = !TERMINAL.has(a.status.phase ?? PatchJobPhase.Pending);
  const bRunning = !TERMINAL.has(b.status.phase ?? PatchJobPhase.Pending);
  if (aRunning !== bRunning) return aRunning;
  return a.created > b.created;
}

/**
 * Seconds each node has been cordoned by one of our PatchJobs (the cordoned-by annotation, and
 * still unschedulable), from the job's status.cordonedTime (its startTime when that is not
 * written yet); 0 for a node whose job is gone (no start known: a cordon left behind). Other nodes
 * get no entry.
 */
export function cordonedSeconds(
  nodes: readonly NodeView[],
  jobByName: (name: string) => JobView | undefined,
  now: number,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const n of nodes) {
    // Only the nodes we hold cordoned: a series per node of the fleet would be 5,000 series of 0 at
    // every scrape of a big cluster (300 KB), for an alert that only ever looks at the cordoned few.
    if (!n.unschedulable || n.cordonedBy === undefined) continue;
    const status = jobByName(n.cordonedBy)?.status;
    const since = epoch(status?.cordonedTime ?? status?.startTime);
    out.set(n.name, since !== undefined && Number.isFinite(since) ? Math.max(0, (now - since) / 1000) : 0);
  }
  return out;
}

/** Seconds from a completed job's start to its completion; undefined when either is missing. */
export function upgradeDurationSeconds(status: {
  startTime?: string | undefined;
  completionTime?: string | undefined;
}): number | undefined {
  const start = epoch(status.startTime);
  const end = epoch(status.completionTime);
  if (start === undefined || end === undefined || !Number.isFinite(start) || !Number.isFinite(end) || end < start)
    return undefined;
  return (end - start) / 1000;
}

/** Control-plane nodes the etcd gate holds now, by stage (every stage present, 0 when none). */
export function etcdWaiting(jobs: readonly JobView[]): Map<string, number> {
  const out = new Map<string, number>(Object.values(EtcdWaitStage).map((s) => [s, 0]));
  for (const j of jobs) {
    const stage = j.status.etcd?.wait?.stage;
    if (stage !== undefined && !TERMINAL.has(j.status.phase ?? '')) out.set(stage, (out.get(stage) ?? 0) + 1);
  }
  return out;
}

/** etcd members by health as each plan's preflight found them (status.etcd); plans without it have no series. */
export function etcdMembers(plans: readonly PlanView[]): { plan: string; healthy: number; unhealthy: number }[] {
  return plans.flatMap((p) => {
    const members = p.status.etcd?.members;
    if (members === undefined) return [];
    const healthy = members.filter((m) => m.healthy).length;
    return [{ plan: p.name, healthy, unhealthy: members.length - healthy }];
  });
}

/** Plans whose last preflight found the support matrix behind the releases (condition SupportMatrixCurrent False): 1, else 0. */
export function staleMatrixPlans(plans: readonly PlanView[]): { plan: string; stale: number }[] {
  return plans.flatMap((p) => {
    const c = p.status.conditions?.find((x) => x.type === ConditionSupportMatrixCurrent);
    return c === undefined ? [] : [{ plan: p.name, stale: c.status === 'False' ? 1 : 0 }];
  });
}
