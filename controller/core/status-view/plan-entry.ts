// One PatchPlan as the status view shows it: phase, what it waits for and until when, progress per
// group, its nodes, held and skipped nodes. Pure: `nowMs` is the clock.
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { TEMPLATE_LABEL } from '../auto-update/child-plan.js';
import { iso } from '../time.js';
import { REPORT_URL_ANNOTATION } from '../report/index.js';
import type { Counts, GroupEntry, NodeEntry, PlanEntry, Wait } from './document.js';
import type { StatusPlanInput } from './input.js';
import { defined } from './defined.js';
import { ms } from './time-text.js';

const FINISHED_PLAN = new Set(['Completed', 'Failed', 'Cancelled']);
const isFinishedPlan = (phase: string): boolean => FINISHED_PLAN.has(phase);

/** The earliest instant the plan's wait ends or gives up at, and what happens then. */
function planUntil(s: PatchPlanStatus): Pick<Wait, 'until' | 'untilWhat'> {
  const candidates: [string | undefined, string][] = [
    [s.healthCheckWait?.deadline, `health check ${s.healthCheckWait?.name ?? ''} gives up`],
    [s.alertWait?.deadline, 'alert gate gives up'],
    [s.kubeProxy?.deadline, 'kube-proxy rollout gives up'],
    [s.nextScheduleTime, 'next schedule'],
  ];
  const known = candidates
    .filter((c): c is [string, string] => ms(c[0]) !== undefined)
    .sort((a, b) => (ms(a[0]) ?? 0) - (ms(b[0]) ?? 0));
  const first = known[0];
  return first ? { until: first[0], untilWhat: first[1] } : {};
}

function planWait(s: PatchPlanStatus, phase: string): Wait {
  const w: Wait = defined({ reason: s.reason || undefined, message: s.message || undefined });
  return isFinishedPlan(phase) ? w : { ...w, ...planUntil(s) };
}

/** Counts from status; where the controller has not written them yet, from the jobs seen. */
function planCounts(s: PatchPlanStatus, nodes: readonly NodeEntry[]): Counts {
  const byPhase = (p: string): number => nodes.filter((n) => n.phase === p).length;
  return {
    total: s.totalNodes ?? nodes.length,
    completed: s.completedNodes ?? byPhase('Completed'),
    running: s.runningNodes ?? nodes.filter((n) => !n.finished).length,
    pending: s.pendingNodes ?? 0,
    failed: s.failedNodes ?? byPhase('Failed'),
    held: s.heldNodes ?? 0,
    skipped: s.skippedNodes ?? 0,
  };
}

function groups(s: PatchPlanStatus): GroupEntry[] {
  return (s.groups ?? []).map((g) => ({
    name: g.name,
    total: g.total,
    completed: g.completed,
    running: g.running,
    pending: g.pending,
    failed: g.failed,
    held: g.held ?? 0,
    skipped: g.skipped ?? 0,
    concurrency: g.concurrency,
    active: g.active,
  }));
}

function pausedBy(p: StatusPlanInput): PlanEntry['pausedBy'] {
  if (p.status.policyPause) return 'failurePolicy';
  return p.spec?.paused ? 'spec' : undefined;
}

function times(s: PatchPlanStatus, nowMs: number): Pick<PlanEntry, 'startTime' | 'completionTime' | 'secondsTotal'> {
  const start = ms(s.startTime);
  const end = ms(s.completionTime) ?? nowMs;
  return {
    startTime: s.startTime,
    completionTime: s.completionTime,
    secondsTotal: start === undefined ? undefined : Math.max(0, Math.floor((end - start) / 1000)),
  };
}

function target(p: StatusPlanInput): PlanEntry['target'] {
  const t = p.spec?.target;
  return defined({
    talosVersion: t?.talosVersion ?? p.status.targetTalosVersion,
    kubernetesVersion: t?.kubernetesVersion ?? p.status.targetKubernetesVersion,
  });
}

/** A plan without its auto-update part (build.ts adds that for templates). */
export function planEntry(p: StatusPlanInput, nodes: NodeEntry[], nowMs: number): PlanEntry {
  const s = p.status;
  const phase = s.phase ?? 'Pending';
  const by = pausedBy(p);
  return defined({
    name: p.name,
    created: iso(p.created),
    phase,
    finished: isFinishedPlan(phase),
    paused: by !== undefined || phase === 'Paused',
    pausedBy: by,
    template: p.spec?.target.autoUpdate?.enabled === true,
    proposedBy: p.labels[TEMPLATE_LABEL],
    target: target(p),
    wait: planWait(s, phase),
    ...times(s, nowMs),
    counts: planCounts(s, nodes),
    groups: groups(s),
    nodes,
    held: [...(s.held ?? [])],
    skipped: [...(s.skipped ?? [])],
    specUnreadable: p.spec === undefined ? true : undefined,
    reportUrl: p.annotations?.[REPORT_URL_ANNOTATION],
  });
}
