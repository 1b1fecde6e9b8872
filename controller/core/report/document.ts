// The machine-readable report: every key always present (null when unknown), in a fixed order,
// so the YAML twin diffs cleanly and parses to the same shape every time.
import { ConditionPreflightPassed } from '../../../schemas/api.js';
import { epoch } from '../time.js';
import type { ReportJob, ReportPlan, ReportSettings } from './types.js';

export interface NodeReport {
  name: string;
  job: string;
  phase: string | null;
  reason: string | null;
  failure: string | null;
  talos: { from: string | null; to: string | null };
  kubernetes: { from: string | null; to: string | null };
  startTime: string | null;
  completionTime: string | null;
  durationSeconds: number | null;
  cordonedTime: string | null;
  uncordonedTime: string | null;
  cordonedSeconds: number | null;
  /** A control-plane node's etcd gate: seconds it held the node (before and after the reboot), and whether its member handed leadership over. */
  etcd?: { waitedSeconds: number; handedOverLeadership: boolean };
}

interface HoldReport {
  node: string;
  reason: string;
}

export interface GroupReport {
  name: string;
  concurrency: number | null;
  total: number | null;
  pending: number | null;
  running: number | null;
  completed: number | null;
  failed: number | null;
  nodes: NodeReport[];
}

/** One hop of a stepwise plan's path (status.path), as the report lists it. */
interface PathHopReport {
  number: number;
  kind: string;
  version: string;
  state: string;
  startTime: string | null;
  completionTime: string | null;
  reason: string;
}

export interface ReportDocument {
  apiVersion: 'kangalpatch.ozalp.dk/v1alpha1';
  kind: 'RolloutReport';
  cluster: string;
  plan: { name: string; uid: string };
  phase: string | null;
  reason: string | null;
  message: string | null;
  target: { talosVersion: string | null; kubernetesVersion: string | null };
  startTime: string | null;
  completionTime: string | null;
  nodes: {
    total: number | null;
    pending: number | null;
    running: number | null;
    completed: number | null;
    failed: number | null;
    held: number;
    skipped: number;
  };
  /** Nodes kept out by their hold annotation (held: waited for; skipped: left out, never patched), as the plan's status names them. */
  holds: { held: HoldReport[]; skipped: HoldReport[] };
  preflight: { status: string | null; reason: string | null; message: string | null };
  source: { commit: string | null; path: string | null; url: string | null };
  groups: GroupReport[];
  /** A stepwise plan's hops in order (target.path: stepwise); absent for other plans, so their reports stay as they were. Each node has a row per hop in groups, named by its job. */
  path?: PathHopReport[];
}

const n = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** Whole seconds between two RFC 3339 times; null unless both are known. */
function secondsBetween(from: string | undefined, to: string | undefined): number | null {
  const a = epoch(from);
  const b = epoch(to);
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b)) return null;
  return Math.max(0, Math.round((b - a) / 1000));
}

/**
 * The commit the report names: the one the plan's spec came from (spec-commit), not the branch head
 * the plan was last synced at, so that a commit touching other files leaves this report as it is.
 * A plan synced before spec-commit existed names its source-commit, as its report already does.
 */
const reportedCommit = (plan: ReportPlan): string | undefined => plan.specCommit ?? plan.sourceCommit;

function sourceUrl(plan: ReportPlan, s: ReportSettings): string | null {
  const commit = reportedCommit(plan);
  if (s.blobUrlBase === undefined || commit === undefined || plan.sourcePath === undefined) return null;
  const path = plan.sourcePath.split('/').map(encodeURIComponent).join('/');
  return `${s.blobUrlBase.replace(/\/+$/, '')}/${commit}/${path}`;
}

function nodeReport(j: ReportJob): NodeReport {
  const st = j.status;
  const failed = st.phase === 'Failed';
  return {
    name: j.nodeName,
    job: j.name,
    phase: n(st.phase),
    reason: n(st.reason),
    failure: failed ? n(st.message) : null,
    talos: {
      from: n(j.before.talos),
      to: n(st.phase === 'Completed' ? st.currentTalosVersion : (st.targetTalosVersion ?? j.targetTalos)),
    },
    kubernetes: {
      from: n(j.before.kubernetes),
      to: n(
        st.phase === 'Completed'
          ? (st.currentKubernetesVersion ?? j.before.kubernetes)
          : (st.targetKubernetesVersion ?? j.targetKubernetes),
      ),
    },
    startTime: n(st.startTime),
    completionTime: n(st.completionTime),
    durationSeconds: secondsBetween(st.startTime, st.completionTime),
    cordonedTime: n(st.cordonedTime),
    uncordonedTime: n(st.uncordonedTime),
    cordonedSeconds: secondsBetween(st.cordonedTime, st.uncordonedTime),
    ...(st.etcd === undefined
      ? {}
      : {
          etcd: { waitedSeconds: st.etcd.waitedSeconds ?? 0, handedOverLeadership: st.etcd.forfeitTime !== undefined },
        }),
  };
}

/** Groups in rollout order (status.groups, then strategy.order, then any other group a job names); nodes by name. */
function groupNames(plan: ReportPlan, jobs: readonly ReportJob[]): string[] {
  const names: string[] = [];
  const add = (g: string): void => {
    if (!names.includes(g)) names.push(g);
  };
  for (const g of plan.status.groups ?? []) add(g.name);
  for (const g of plan.order ?? []) add(g);
  for (const j of [...jobs].sort((a, b) => a.group.localeCompare(b.group))) add(j.group);
  return names;
}

export function reportDocument(plan: ReportPlan, jobs: readonly ReportJob[], s: ReportSettings): ReportDocument {
  const st = plan.status;
  const pre = st.conditions?.find((c) => c.type === ConditionPreflightPassed);
  const groups = groupNames(plan, jobs).flatMap((name): GroupReport[] => {
    const g = st.groups?.find((x) => x.name === name);
    const nodes = jobs
      .filter((j) => j.group === name)
      .sort((a, b) => (a.nodeName < b.nodeName ? -1 : a.nodeName > b.nodeName ? 1 : 0))
      .map(nodeReport);
    // A group from strategy.order with no status row and no jobs has nothing to say.
    if (!g && nodes.length === 0) return [];
    return [
      {
        name,
        concurrency: n(g?.concurrency),
        total: n(g?.total),
        pending: n(g?.pending),
        running: n(g?.running),
        completed: n(g?.completed),
        failed: n(g?.failed),
        nodes,
      },
    ];
  });
  return {
    apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
    kind: 'RolloutReport',
    cluster: s.cluster,
    plan: { name: plan.name, uid: plan.uid },
    phase: n(st.phase),
    reason: n(st.reason),
    message: n(st.message),
    target: { talosVersion: n(st.targetTalosVersion), kubernetesVersion: n(st.targetKubernetesVersion) },
    startTime: n(st.startTime),
    completionTime: n(st.completionTime),
    nodes: {
      total: n(st.totalNodes),
      pending: n(st.pendingNodes),
      running: n(st.runningNodes),
      completed: n(st.completedNodes),
      failed: n(st.failedNodes),
      held: st.heldNodes ?? 0,
      skipped: st.skippedNodes ?? 0,
    },
    holds: { held: st.held ?? [], skipped: st.skipped ?? [] },
    preflight: { status: pre ? pre.status : null, reason: pre ? pre.reason : null, message: pre ? pre.message : null },
    source: { commit: n(reportedCommit(plan)), path: n(plan.sourcePath), url: sourceUrl(plan, s) },
    groups,
    ...(st.path === undefined
      ? {}
      : {
          path: st.path.hops.map((h) => ({
            number: h.number,
            kind: h.kind,
            version: h.version,
            state: h.state,
            startTime: n(h.startTime),
            completionTime: n(h.completionTime),
            reason: h.reason,
          })),
        }),
  };
}
