// Performs one GitOps sync: load the snapshot's files, let core decide against the cluster's
// PatchPlans (from the informer), then apply / delete / annotate, one plan at a time, and refresh the
// annotations of unchanged plans a few at a time until a deadline. One plan's failure never blocks
// the others; the first error is returned for the loop's backoff.
import { Annotation, API_VERSION, Kind, MANAGED_BY_GITOPS, PLAN_FINALIZER } from '../../../schemas/api.js';
import {
  decideSync,
  DEFAULT_SYNC_LIMITS,
  formatSourceProblem,
  type ClusterPlan,
  type LoadedCommit,
  type PlanApplyDecision,
  type SourceProblem,
  type SyncLimits,
} from '../../core/gitops/sync-plan.js';
import type { KubeInformers, KubePort } from '../../kube/port.js';
import type { PlanView } from '../../kube/views.js';
import type { OpContext } from '../../runtime/context.js';
import { eachLimited } from '../../runtime/each-limited.js';
import type { Logger } from '../../telemetry/logger.js';
import { loadPlanSources } from '../load/index.js';
import { DEFAULT_REPO_LIMITS } from '../load/limits.js';
import type { Snapshot } from '../source/index.js';

const REFRESHES_IN_PARALLEL = 8;

export interface SyncDeps {
  kube: KubePort;
  informers: Pick<KubeInformers, 'patchPlans'>;
  operatorNamespace: string;
  log: Logger;
  onApplied?: (reason: string) => void;
  onDeleted?: () => void;
  /** The cap on active plans per cluster (default 200). */
  limits?: SyncLimits;
}

export interface SyncReport {
  commit: string;
  /** Plan name → its file, for every valid plan of the commit (the report writer links to it). */
  plans: { name: string; file: string }[];
  applied: { name: string; reason: string }[];
  deleted: string[];
  /** Every problem of the commit's files, sorted by file and position. */
  problems: SourceProblem[];
  /** Plans whose write failed (retried on the next pass). */
  failed: { name: string; error: unknown }[];
  /** Annotation-only refreshes (NewCommit) not started before `refreshUntil`: the next pass does them, unless a newer commit makes them moot. */
  deferred: string[];
  /** The commit broke a cap and nothing of it was applied (also the one entry of `problems`). */
  refused?: SourceProblem | undefined;
}

export interface SyncOptions {
  /**
   * Clock time after which no further annotation-only refresh starts. With 50 unchanged plans a
   * commit costs 50 writes; on a loaded apiserver that outlasts the poll interval, and the plan of
   * the next push would wait behind all of them. The loop polls again instead and goes on with
   * what is left, or with the newer commit (whose new and changed plans come first).
   */
  refreshUntil?: number;
}

/** Files and plans of a snapshot, loaded (pure apart from parsing); over a cap, the commit is refused as a whole. */
export function loadSnapshot(
  snapshot: Snapshot,
  operatorNamespace: string,
  maxPlans = DEFAULT_REPO_LIMITS.maxPlans,
): LoadedCommit {
  const refuse = (refused: SourceProblem): LoadedCommit => ({
    commit: snapshot.commit,
    plans: [],
    problems: [refused],
    files: [],
    complete: false,
    refused,
  });
  if (snapshot.refused) return refuse(snapshot.refused);
  const loaded = loadPlanSources(snapshot.sources, { operatorNamespace, rejectDuplicates: true });
  const past = loaded.plans[maxPlans];
  if (past) {
    const message = `over the cap of ${maxPlans} PatchPlans per commit: this commit defines ${loaded.plans.length}: nothing of commit ${snapshot.commit.slice(0, 12)} is applied; the plans applied before stay as they are`;
    return refuse({ file: past.file, line: past.line, column: past.column, path: '', message });
  }
  const problems = [...snapshot.problems, ...loaded.problems];
  return {
    commit: snapshot.commit,
    plans: loaded.plans.map((p) => ({
      name: p.plan.metadata.name,
      file: p.file,
      spec: p.plan.spec,
      rawSpec: (p.raw.spec ?? {}) as Record<string, unknown>,
      labels: p.plan.metadata.labels,
    })),
    problems,
    files: [...snapshot.sources.map((s) => s.file), ...snapshot.problems.map((p) => p.file)],
    complete: snapshot.complete,
  };
}

export function clusterPlan(v: PlanView): ClusterPlan {
  return {
    name: v.name,
    uid: v.uid,
    managed: v.annotations[Annotation.ManagedBy] === MANAGED_BY_GITOPS,
    sourceCommit: v.annotations[Annotation.SourceCommit],
    specCommit: v.annotations[Annotation.SpecCommit],
    sourcePath: v.annotations[Annotation.SourcePath],
    sourceProblems: v.annotations[Annotation.SourceProblems],
    spec: v.spec,
    deleting: v.deleting,
    phase: v.status.phase,
  };
}

export async function syncCommit(
  ctx: OpContext,
  deps: SyncDeps,
  loaded: LoadedCommit,
  opts: SyncOptions = {},
): Promise<SyncReport> {
  const decision = decideSync(
    loaded,
    deps.informers.patchPlans.list().map(clusterPlan),
    deps.limits ?? DEFAULT_SYNC_LIMITS,
  );
  if (decision.refused) {
    deps.log.warn(
      { commit: loaded.commit, problem: formatSourceProblem(decision.refused) },
      'commit refused: nothing of it is applied',
    );
    return {
      commit: loaded.commit,
      plans: [],
      applied: [],
      deleted: [],
      problems: [decision.refused],
      failed: [],
      deferred: [],
      refused: decision.refused,
    };
  }
  const problems = [...loaded.problems, ...decision.problems];
  const report: SyncReport = {
    commit: loaded.commit,
    plans: loaded.plans.map((p) => ({ name: p.name, file: p.file })),
    applied: [],
    deleted: [],
    problems,
    failed: [],
    deferred: [],
  };
  for (const p of decision.problems)
    deps.log.warn({ file: p.file, problem: formatSourceProblem(p) }, 'plan not applied');
  // New and changed specs one at a time, first, then deletions and problem annotations; the
  // annotation-only refreshes of unchanged plans (NewCommit: one write per plan of the repository on
  // every commit) last, a few at a time and only until `refreshUntil`, so a long pass does not hold
  // the next poll (and the next push) back.
  const changed = decision.apply.filter((a) => a.reason !== 'NewCommit');
  const refreshed = decision.apply.filter((a) => a.reason === 'NewCommit');
  const apply = (a: PlanApplyDecision): Promise<void> =>
    attempt(report, a.name, async () => {
      const before = deps.informers.patchPlans.get(a.name);
      deps.informers.patchPlans.observeWrite(await deps.kube.applyPlan(ctx, applyInput(loaded.commit, a)));
      report.applied.push({ name: a.name, reason: a.reason });
      deps.onApplied?.(a.reason);
      if (a.reason === 'DriftReverted' && before) reportDrift(ctx, deps, before, a);
      else
        deps.log.info(
          { plan: a.name, file: a.file, commit: loaded.commit, reason: a.reason },
          `applied PatchPlan from Git (${a.reason})`,
        );
    });
  for (const a of changed) await apply(a);
  for (const d of decision.delete) {
    await attempt(report, d.name, async () => {
      await deps.kube.deletePlan(ctx, d.name, d.uid);
      report.deleted.push(d.name);
      deps.onDeleted?.();
      deps.log.info(
        { plan: d.name, commit: loaded.commit },
        'deleting PatchPlan: its file left Git (running PatchJobs finish first)',
      );
    });
  }
  for (const n of decision.annotateProblems) {
    await attempt(report, n.name, async () => {
      deps.informers.patchPlans.observeWrite(
        await deps.kube.annotatePlan(ctx, n.name, { [Annotation.SourceProblems]: n.problems ?? null }),
      );
      if (n.problems)
        deps.log.warn(
          { plan: n.name, problems: n.problems },
          'the plan file in Git is invalid: the last good spec stays applied',
        );
    });
  }
  const until = opts.refreshUntil;
  await eachLimited(refreshed, REFRESHES_IN_PARALLEL, async (a) => {
    if (until !== undefined && ctx.clock.now() >= until) report.deferred.push(a.name);
    else await apply(a);
  });
  return report;
}

function applyInput(commit: string, a: PlanApplyDecision) {
  return {
    name: a.name,
    // Every apply names spec-commit: server-side apply would drop an annotation the manager leaves out.
    annotations: {
      [Annotation.SourceCommit]: commit,
      [Annotation.SpecCommit]: a.specCommit,
      [Annotation.SourcePath]: a.file,
      [Annotation.ManagedBy]: MANAGED_BY_GITOPS,
    },
    labels: a.labels,
    finalizers: [PLAN_FINALIZER],
    spec: a.spec,
  };
}

function reportDrift(ctx: OpContext, deps: SyncDeps, before: PlanView, a: PlanApplyDecision): void {
  const note = `spec was changed in the cluster; put back as ${a.file} has it in Git`;
  deps.log.warn({ plan: a.name, file: a.file }, `drift reverted: ${note}`);
  void deps.kube.emitEvent(ctx, {
    regarding: { apiVersion: API_VERSION, kind: Kind.PatchPlan, name: before.name, uid: before.uid },
    type: 'Warning',
    reason: 'DriftReverted',
    action: 'Apply',
    note,
  });
}

async function attempt(report: SyncReport, name: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (error) {
    report.failed.push({ name, error });
  }
}
