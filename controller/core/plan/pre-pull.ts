// Installer pre-pulls (spec.prePull): while a round runs, the installer is pulled on the nodes the
// plan schedules next, so the pull leaves the critical path. Bounded: only the next round of the
// group whose turn it is (its next `concurrency` pending nodes), never more than `concurrency` pulls
// in flight, only lifecycle-flow nodes (Talos >= 1.13 has ImageService.Pull; legacy nodes cannot
// pre-pull). A failed pre-pull is not retried and fails nothing: the node's own job pulls again.
import semver from 'semver';
import type { PatchPlanStatus, PrePullStatus } from '../../../schemas/patchplan.js';
import { detectionFor, installerFor } from '../installer.js';
import { UpgradeFlow, upgradeFlowFor } from '../talos-flow.js';
import { iso } from '../time.js';
import type { Progress } from './progress.js';
import type { GroupPlan } from './selection.js';
import type { PlanNodeFacts, PlanObservation, PrePullFacts, PrePullRequest, PrePullResult } from './types.js';

/**
 * The plan's pre-pull records brought up to date: results folded in, entries of nodes that are no
 * longer waiting for their turn (their PatchJob exists, or they left the plan) dropped.
 */
export function withPrePullResults(status: PatchPlanStatus, o: PlanObservation, prog: Progress): PatchPlanStatus {
  const entries = status.prePulls;
  if (entries === undefined) return status;
  const waiting = new Set([...prog.pendingNodes.values()].flat());
  const results = o.prePulls?.results ?? [];
  const next = entries.filter((e) => waiting.has(e.node)).map((e) => withResult(e, results));
  const out: PatchPlanStatus = { ...status, prePulls: next };
  if (next.length === 0) delete out.prePulls;
  return out;
}

function withResult(entry: PrePullStatus, results: readonly PrePullResult[]): PrePullStatus {
  if (entry.pulledTime !== undefined || entry.failedTime !== undefined) return entry;
  const r = results.find(
    (x) => x.node === entry.node && x.image === entry.image && x.at >= Date.parse(entry.startTime),
  );
  if (!r) return entry;
  return r.error === undefined
    ? { ...entry, pulledTime: iso(r.at) }
    : { ...entry, failedTime: iso(r.at), error: r.error };
}

/**
 * The pre-pulls to start now for `group` (the group whose turn it is, its slots all busy, its
 * running nodes past their own pull): its next
 * `concurrency` pending nodes that run the lifecycle flow toward the target and have no pre-pull of
 * that image done, failed or in flight; at most `concurrency` in flight in all. Empty: nothing to do.
 */
export function prePullsToStart(
  o: PlanObservation,
  status: PatchPlanStatus,
  group: GroupPlan,
  pending: readonly string[],
): PrePullRequest[] {
  const { spec } = o.plan;
  const target = spec.target.talosVersion;
  if (!spec.prePull || target === undefined) return [];
  // Without a runner in the shell (o.prePulls undefined) nothing could carry a pull out.
  const facts = o.prePulls;
  if (facts === undefined) return [];
  const free = group.concurrency - facts.running.size;
  if (free <= 0 || stillPulling(o, group)) return [];
  const nodes = new Map(o.nodes.map((n) => [n.name, n]));
  const nextRound = pending.filter((n) => !(o.canHandOver && n === o.ownNode)).slice(0, group.concurrency);
  const out: PrePullRequest[] = [];
  for (const name of nextRound) {
    const node = nodes.get(name);
    const image = node && installerToPrePull(o, node, target);
    if (image === undefined || alreadyPrePulled(facts, status, { node: name, image })) continue;
    out.push({ node: name, image });
  }
  return out.slice(0, free);
}

/** A pre-pull of this image on this node is in flight here, has a result here, or its status entry ended. */
function alreadyPrePulled(facts: PrePullFacts, status: PatchPlanStatus, { node, image }: PrePullRequest): boolean {
  if (facts.running.has(node) || facts.results.some((r) => r.node === node && r.image === image)) return true;
  const entry = status.prePulls?.find((e) => e.node === node && e.image === image);
  // Started but neither ended nor running here: the process that ran it is gone; pull again.
  return entry !== undefined && (entry.pulledTime !== undefined || entry.failedTime !== undefined);
}

/**
 * A job of the current round is still in Pending (reading the node, pulling its own installer):
 * the next round pulls once this one drains and reboots, not alongside its pulls.
 */
function stillPulling(o: PlanObservation, group: GroupPlan): boolean {
  return o.jobs.some((j) => j.group === group.name && (j.phase === undefined || j.phase === 'Pending'));
}

/** The installer the node's job will pull, when the node can and needs to pre-pull it. */
function installerToPrePull(o: PlanObservation, node: PlanNodeFacts, target: string): string | undefined {
  const current = node.talosVersion;
  if (current === undefined || upgradeFlowFor(current) !== UpgradeFlow.Lifecycle) return undefined;
  if (!semver.valid(current) || !semver.valid(target) || semver.eq(current, target)) return undefined;
  if (semver.lt(target, current) && !o.plan.spec.target.allowTalosDowngrade) return undefined;
  // The platform or Secure Boot state left to the node is read by its job from its Talos API: the plan, which does not read it, pre-pulls nothing there.
  const detect = detectionFor(o.plan.spec.target, node.installerAnnotations);
  if (detect.platform || detect.secureBoot) return undefined;
  const installer = installerFor(o.plan.spec.target, target, node);
  // A node whose override annotations are wrong gets no pre-pull: its job fails before pulling anything.
  return 'problem' in installer ? undefined : installer.image;
}

/** The status after starting `pulls`: one entry per node, started now. */
export function withPrePullsStarted(
  status: PatchPlanStatus,
  pulls: readonly PrePullRequest[],
  now: number,
): PatchPlanStatus {
  const started = new Set(pulls.map((p) => p.node));
  const kept = (status.prePulls ?? []).filter((e) => !started.has(e.node));
  return {
    ...status,
    prePulls: [...kept, ...pulls.map((p) => ({ node: p.node, image: p.image, startTime: iso(now) }))],
  };
}
