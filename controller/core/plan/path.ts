// A stepwise plan (target.path: stepwise) rolls out hop by hop: each hop of status.path is a full
// rollout of the nodes it moves (groups, concurrency, gates, windows, etcd, failure policy), decided
// by the one plan decision on a view of the plan narrowed to that hop: the hop's target, its own
// PatchJobs (named and labelled by hop number), and the nodes it moves. The next hop starts only
// when the plan decision says the hop is Completed (every node of it finished, and for a Kubernetes
// hop the control plane and kube-proxy done first, as for any Kubernetes target).
import semver from 'semver';
import { PathHopState, type PathHopStatus, type PlanPathStatus } from '../../../schemas/path.js';
import type { PatchPlanSpec, PatchPlanStatus } from '../../../schemas/patchplan.js';
import { kubernetesSupported, kubernetesUpgradePath, talosUpgradePath, type Verdict } from '../support-matrix.js';
import type { Hop } from '../paths/types.js';
import { iso } from '../time.js';
import { setCondition } from '../conditions.js';
import { ConditionSupportMatrixCurrent } from '../../../schemas/api.js';
import { matchesSelector } from '../selector.js';
import { say } from './status.js';
import type { PlanJobFacts, PlanNodeFacts, PlanObservation, PlanStep, PreflightCheck } from './types.js';

export const isStepwise = (spec: PatchPlanSpec): boolean => spec.target.path === 'stepwise';

/** A plan that may upgrade Kubernetes: a Kubernetes target, or a stepwise path (its hops may). */
export const movesKubernetes = (spec: PatchPlanSpec): boolean =>
  spec.target.kubernetesVersion !== undefined || isStepwise(spec);

const hopWhat = (hop: Pick<PathHopStatus, 'kind' | 'version'>): string =>
  `${hop.kind === 'talos' ? 'Talos' : 'Kubernetes'} ${hop.version}`;

/** The hop a pass works on: the first not Completed, or the last once every hop is. */
export function hopInFocus(path: PlanPathStatus | undefined): PathHopStatus | undefined {
  return path?.hops.find((h) => h.state !== PathHopState.Completed) ?? path?.hops.at(-1);
}

/** The plan's spec as one hop sees it: the hop's version is the whole target. */
function hopSpec(spec: PatchPlanSpec, hop: PathHopStatus): PatchPlanSpec {
  const { talosVersion: _talos, kubernetesVersion: _kubernetes, ...rest } = spec.target;
  const target = {
    ...rest,
    path: 'direct' as const,
    ...(hop.kind === 'talos' ? { talosVersion: hop.version } : { kubernetesVersion: hop.version }),
  };
  return { ...spec, target };
}

/**
 * Whether a node without a job of the hop takes it: it runs below the hop's version, reaches it in
 * one supported step, and runs a supported Talos × Kubernetes pair after it. A node that joined
 * later further behind, or that failed an earlier hop, is left out rather than made to skip a minor
 * or run an unsupported pair (the plan's message names it).
 */
function takesHop(node: PlanNodeFacts, hop: PathHopStatus): boolean {
  const current = hop.kind === 'talos' ? node.talosVersion : node.kubeletVersion;
  if (current === undefined || semver.valid(current) === null) return false;
  if (!semver.lt(current, hop.version)) return false;
  const step =
    hop.kind === 'talos' ? talosUpgradePath(current, hop.version) : kubernetesUpgradePath(current, hop.version);
  const after =
    hop.kind === 'talos'
      ? kubernetesSupported(hop.version, node.kubeletVersion ?? '')
      : kubernetesSupported(node.talosVersion ?? '', hop.version);
  return isOk(step) && isOk(after);
}

/** A verdict that does not refuse (one the matrix cannot check is left to the preflight that computed the path). */
const isOk = (v: Verdict): boolean => !('ok' in v) || v.ok;

/** Nodes of the plan behind the hop that cannot take it in one step. */
function leftOut(o: PlanObservation, hop: PathHopStatus): string[] {
  return o.nodes
    .filter((n) => {
      if (!matchesSelector(o.plan.spec.nodeSelector, n.labels)) return false;
      const current = hop.kind === 'talos' ? n.talosVersion : n.kubeletVersion;
      return (
        current !== undefined && semver.valid(current) !== null && semver.lt(current, hop.version) && !takesHop(n, hop)
      );
    })
    .map((n) => n.name);
}

/** The observation of one hop: its target, its jobs, and the nodes it moves (those with a job of it, and those behind it). */
export function hopObservation(o: PlanObservation, hop: PathHopStatus): PlanObservation {
  const jobs = o.jobs.filter((j) => j.hop === hop.number);
  const withJob = new Set(jobs.map((j) => j.nodeName));
  const nodes = o.nodes.filter((n) => withJob.has(n.name) || takesHop(n, hop));
  return { ...o, plan: { ...o.plan, spec: hopSpec(o.plan.spec, hop) }, jobs, nodes };
}

/** The hop's state from the phase its view decided: a hop the rollout has not reached yet stays Pending through a failed preflight. */
function hopState(phase: PatchPlanStatus['phase'], hop: PathHopStatus): PathHopState {
  if (phase === 'Completed') return PathHopState.Completed;
  if (phase === 'InProgress') return PathHopState.InProgress;
  if (phase === 'Failed') return hop.state === PathHopState.Pending ? PathHopState.Pending : PathHopState.Failed;
  // Paused, Cancelled, Preflighting: as it was (a failed hop whose job was deleted to retry it runs again).
  return hop.state === PathHopState.Failed ? PathHopState.InProgress : hop.state;
}

/** `prefix: message`, once. */
const prefixed = (prefix: string, message: string | undefined): string =>
  message?.startsWith(prefix) ? message : `${prefix}${message ?? ''}`;

/**
 * The plan step of a hop's view, as the plan's step: the hop's state in status.path, the plan's
 * own targets; a hop Completed before the last one starts the next (the plan stays InProgress).
 */
export function afterHop(o: PlanObservation, hop: PathHopStatus, step: PlanStep): PlanStep {
  const path = o.plan.status.path;
  if (path === undefined) return step;
  const updated = withHopState(hop, hopState(step.status.phase, hop), o.now);
  const hops = path.hops.map((h) => (h.number === hop.number ? updated : h));
  const status: PatchPlanStatus = { ...withTargets(step.status, o.plan.spec), path: { ...path, hops } };
  const next = hops.find((h) => h.state !== PathHopState.Completed);
  const index = hops.findIndex((h) => h.number === hop.number) + 1;
  const place = `hop ${index} of ${hops.length}`;
  if (updated.state === PathHopState.Completed && next !== undefined)
    return nextHop(step, status, `${place} done (${hopWhat(hop)}); next: ${hopWhat(next)}`);
  if (updated.state === PathHopState.Failed && step.status.phase === 'Failed' && hop.state !== PathHopState.Failed) {
    const note = `${place} (${hopWhat(hop)}) failed: ${step.status.message ?? ''}`;
    return {
      ...step,
      status: say(status, step.status.reason ?? 'HopFailed', note),
      events: [...step.events, { type: 'Warning', reason: 'HopFailed', note }],
    };
  }
  if (updated.state === PathHopState.Completed)
    return { ...step, status: { ...status, message: prefixed(`path done, ${hops.length} hop(s): `, status.message) } };
  const out = leftOut(o, hop);
  const note =
    out.length > 0
      ? `; left out (cannot reach ${hop.version} in one supported step; retry a failed node before its hop ends, or change the plan to compute the path again): ${out.slice(0, 5).join(', ')}`
      : '';
  const message = prefixed(`${place} (${hopWhat(hop)}): `, status.message);
  return { ...step, status: { ...status, message: message.endsWith(note) ? message : `${message}${note}` } };
}

/** The hop with its new state, started and completed at `now` when it first is. */
function withHopState(hop: PathHopStatus, state: PathHopState, now: number): PathHopStatus {
  const updated: PathHopStatus = { ...hop, state };
  if (state !== PathHopState.Pending) updated.startTime ??= iso(now);
  if (state === PathHopState.Completed) updated.completionTime ??= iso(now);
  else delete updated.completionTime;
  return updated;
}

/** A hop before the last done: the plan stays InProgress and the next pass starts the next hop (its kube-proxy step afresh). */
function nextHop(step: PlanStep, status: PatchPlanStatus, note: string): PlanStep {
  const open: PatchPlanStatus = { ...status, phase: 'InProgress' };
  delete open.completionTime;
  delete open.kubeProxyUpgraded;
  delete open.kubeProxy;
  return {
    ...step,
    action: undefined,
    status: say(open, 'HopCompleted', note),
    events: [{ type: 'Normal', reason: 'HopCompleted', note }],
    requeueAfterMs: 0,
  };
}

/** status.targetTalosVersion / targetKubernetesVersion: the plan's destination, not the hop's. */
function withTargets(status: PatchPlanStatus, spec: PatchPlanSpec): PatchPlanStatus {
  const out = { ...status };
  delete out.targetTalosVersion;
  delete out.targetKubernetesVersion;
  if (spec.target.talosVersion !== undefined) out.targetTalosVersion = spec.target.talosVersion;
  if (spec.target.kubernetesVersion !== undefined) out.targetKubernetesVersion = spec.target.kubernetesVersion;
  return out;
}

/**
 * status.path from a path the preflight computed: hops already Completed are kept; the rest are
 * numbered after them and after every hop that has jobs, so a new hop never takes an old hop's job
 * names. When the remaining hops differ from those they replace, `changed` says how.
 */
export function recordedPath(
  previous: PlanPathStatus | undefined,
  hops: readonly Hop[],
  jobs: readonly PlanJobFacts[],
  now: number,
): PlanPathStatus {
  const done = previous?.hops.filter((h) => h.state === PathHopState.Completed) ?? [];
  const used = Math.max(0, ...done.map((h) => h.number), ...jobs.map((j) => j.hop ?? 0));
  const fresh: PathHopStatus[] = hops.map((h, i) => ({
    number: used + i + 1,
    kind: h.kind,
    version: h.to,
    reason: h.reason.slice(0, 500),
    state: PathHopState.Pending,
  }));
  const before = (previous?.hops ?? [])
    .filter((h) => h.state !== PathHopState.Completed)
    .map(hopWhat)
    .join(' → ');
  const after = fresh.map(hopWhat).join(' → ');
  const changed =
    previous !== undefined && before !== after
      ? `the remaining hops were ${before || 'none'}; from the versions the nodes run now they are ${after || 'none'}`.slice(
          0,
          1000,
        )
      : undefined;
  return { computedTime: iso(now), hops: [...done, ...fresh], ...(changed === undefined ? {} : { changed }) };
}

/** A stepwise plan whose checks all passed but computed no path must not start: the failed check that says so. */
export function missingPathCheck(spec: PatchPlanSpec, checks: readonly PreflightCheck[]): PreflightCheck | undefined {
  if (!isStepwise(spec) || checks.some((x) => x.path !== undefined) || checks.some((x) => !x.passed)) return undefined;
  return { name: 'UpgradePath', passed: false, message: 'no upgrade path was computed for this stepwise plan' };
}

/** The status after a passed preflight, with the path its UpgradePath check computed (none for other plans). */
export function withPath(
  o: PlanObservation,
  status: PatchPlanStatus,
  checks: readonly PreflightCheck[],
): PatchPlanStatus {
  const computed = checks.find((x) => x.path !== undefined)?.path;
  return computed === undefined
    ? status
    : { ...status, path: recordedPath(o.plan.status.path, computed, o.jobs, o.now) };
}

/** The SupportMatrixCurrent condition from what the UpgradePath check found of the releases (unchanged when it did not run). */
export function withMatrixCondition(
  o: PlanObservation,
  status: PatchPlanStatus,
  checks: readonly PreflightCheck[],
): PatchPlanStatus {
  const gaps = checks.find((x) => x.matrixGaps !== undefined)?.matrixGaps;
  if (gaps === undefined) return status;
  const condition =
    gaps.length === 0
      ? {
          type: ConditionSupportMatrixCurrent,
          status: 'True' as const,
          reason: 'KnowsEveryRelease',
          message: 'the support matrix knows every Talos minor the releases show',
        }
      : {
          type: ConditionSupportMatrixCurrent,
          status: 'False' as const,
          reason: 'ReleasesAhead',
          message: `${gaps.join('; ')}: paths use only the minors the table knows; upgrade KangalPatch for a current table`,
        };
  return {
    ...status,
    conditions: setCondition(status.conditions, { ...condition, observedGeneration: o.plan.generation }, o.now),
  };
}

/** `; path: A → B` for the PreflightPassed message: the hops left, and why they changed. */
export function pathNote(path: PlanPathStatus | undefined): string {
  if (path === undefined) return '';
  const left = path.hops
    .filter((h) => h.state !== PathHopState.Completed)
    .map(hopWhat)
    .join(' → ');
  return `; path: ${left || 'nothing left'}${path.changed ? ` (${path.changed})` : ''}`;
}
