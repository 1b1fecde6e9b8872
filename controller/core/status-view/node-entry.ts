// One PatchJob as the status view shows it: phase, time in phase, what it waits for, versions
// before → after, time cordoned and in all. Pure: `nowMs` is the clock.
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import { GROUP_LABEL, NODE_LABEL, PLAN_LABEL } from '../plan/jobs.js';
import type { NodeEntry, VersionChange, Wait } from './document.js';
import type { StatusJobInput, StatusNodeInput } from './input.js';
import { defined } from './defined.js';
import { ms } from './time-text.js';

const FINISHED_JOB = new Set(['Completed', 'Failed']);

/** The plan a job belongs to: its spec, or the label the plan reconciler put on it. */
export const planOfJob = (j: StatusJobInput): string | undefined => j.spec?.patchPlanRef ?? j.labels[PLAN_LABEL];
/** The node a job patches: its spec, else its label, else the job's own name. */
export const nodeOfJob = (j: StatusJobInput): string => j.spec?.nodeName ?? j.labels[NODE_LABEL] ?? j.name;

/** Whole seconds from `from` to `to` (or to now); undefined when `from` is unknown. */
function seconds(from: string | undefined, to: string | undefined, nowMs: number): number | undefined {
  const a = ms(from);
  if (a === undefined) return undefined;
  const b = ms(to) ?? nowMs;
  return Math.max(0, Math.floor((b - a) / 1000));
}

/** The deadline that ends the current wait: the etcd gate's when it holds the node, else the phase's. */
function jobWait(s: PatchJobStatus, phase: string): Wait {
  const w: Wait = defined({ reason: s.reason || undefined, message: s.message || undefined });
  if (FINISHED_JOB.has(phase)) return w;
  if (s.etcd?.wait) return { ...w, until: s.etcd.wait.deadline, untilWhat: 'etcd gate gives up' };
  if (s.deadline) return { ...w, until: s.deadline, untilWhat: `${phase} gives up` };
  return w;
}

function versions(
  before: string | undefined,
  current: string | undefined,
  fromNode: string | undefined,
  target: string | undefined,
): VersionChange {
  const after = current ?? fromNode;
  // A version the plan does not move was the same before: the node's now.
  const was = before ?? (target === undefined ? after : undefined);
  return defined({ before: was, after, target });
}

/** Where the job stands in time: since when, how long in its phase, cordoned, in all. */
function jobTimes(s: PatchJobStatus, finished: boolean, nowMs: number): Partial<NodeEntry> {
  const cordonEnd = s.uncordonedTime ?? (finished ? s.completionTime : undefined);
  return {
    startTime: s.startTime,
    phaseStartTime: s.phaseStartTime,
    completionTime: s.completionTime,
    secondsInPhase: finished ? undefined : seconds(s.phaseStartTime ?? s.startTime, undefined, nowMs),
    secondsCordoned: seconds(s.cordonedTime, cordonEnd, nowMs),
    secondsTotal: seconds(s.startTime, s.completionTime, nowMs),
  };
}

/** What holds a running job besides its reason: the PDB blocking the drain, the etcd gate. */
function holders(s: PatchJobStatus, finished: boolean): Partial<NodeEntry> {
  if (finished) return {};
  return { blockingPDB: s.blockingPDB, etcdWait: s.etcd?.wait?.stage };
}

function jobVersions(j: StatusJobInput, node: StatusNodeInput | undefined): Pick<NodeEntry, 'talos' | 'kubernetes'> {
  const s = j.status;
  const target = j.spec?.target;
  return {
    talos: versions(
      s.initialTalosVersion,
      s.currentTalosVersion,
      node?.talosVersion,
      target?.talosVersion ?? s.targetTalosVersion,
    ),
    kubernetes: versions(
      s.initialKubernetesVersion,
      s.currentKubernetesVersion,
      node?.kubeletVersion,
      target?.kubernetesVersion ?? s.targetKubernetesVersion,
    ),
  };
}

export function nodeEntry(j: StatusJobInput, node: StatusNodeInput | undefined, nowMs: number): NodeEntry {
  const s = j.status;
  const phase = s.phase ?? 'Pending';
  const finished = FINISHED_JOB.has(phase);
  return defined({
    node: nodeOfJob(j),
    job: j.name,
    group: j.spec?.group ?? j.labels[GROUP_LABEL] ?? '?',
    phase,
    finished,
    wait: jobWait(s, phase),
    ...holders(s, finished),
    ...jobTimes(s, finished, nowMs),
    ...jobVersions(j, node),
    ready: node?.ready,
    leftCordoned: s.nodeLeftCordoned ? true : undefined,
  });
}
