// What one GitOps sync does, decided from the loaded commit and the cluster's PatchPlans: apply
// (new, changed, new commit, or drifted, each with the commit its spec is named after), delete (managed plans whose file left Git), mark plans whose
// file became invalid (they keep their last good spec), and refuse names that belong to plans the
// loop did not create. Pure: no I/O, no clock.
import { sameValue } from '../same-value.js';

export interface SourceProblem {
  file: string;
  line: number;
  column: number;
  path: string;
  message: string;
}

export interface GitPlan {
  name: string;
  file: string;
  /** The spec with defaults applied (compared with the cluster's). */
  spec: Record<string, unknown>;
  /** The spec as the file wrote it (what is applied). */
  rawSpec: Record<string, unknown>;
  /** metadata.labels of the file (e.g. the auto-update template label of a child plan). */
  labels?: Readonly<Record<string, string>> | undefined;
}

export interface LoadedCommit {
  commit: string;
  plans: readonly GitPlan[];
  problems: readonly SourceProblem[];
  /** Every file read under the plans path, valid or not. */
  files: readonly string[];
  /** False when a folder could not be read: nothing is pruned. */
  complete: boolean;
  /** The commit breaks a cap (files, bytes, plans per commit): nothing of it is applied, deleted or annotated. */
  refused?: SourceProblem | undefined;
}

export interface ClusterPlan {
  name: string;
  uid: string;
  /** Created by the GitOps loop (managed-by annotation). */
  managed: boolean;
  sourceCommit: string | undefined;
  /** The spec-commit annotation: the commit the current spec (and path) came from; undefined on plans synced before it existed. */
  specCommit: string | undefined;
  sourcePath: string | undefined;
  /** The source-problems annotation currently set. */
  sourceProblems: string | undefined;
  /** Parsed with defaults; undefined when it does not parse. */
  spec: Record<string, unknown> | undefined;
  deleting: boolean;
  /** status.phase; Completed, Failed and Cancelled plans are not active. */
  phase?: string | undefined;
}

type ApplyReason = 'Created' | 'Changed' | 'NewCommit' | 'DriftReverted';

export interface PlanApplyDecision {
  name: string;
  file: string;
  reason: ApplyReason;
  /** The spec to apply: the file's, with `paused` left out unless the file says `paused: true`
   *  (spec.paused is then the operator's and the Pause policy's switch, and SSA never resets it). */
  spec: Record<string, unknown>;
  labels?: Readonly<Record<string, string>> | undefined;
  /** The commit the applied spec is named after (spec-commit annotation): see specCommitOf. */
  specCommit: string;
}

export interface SyncDecision {
  apply: PlanApplyDecision[];
  delete: { name: string; uid: string }[];
  /** Managed plans whose source-problems annotation must change (undefined: clear it). */
  annotateProblems: { name: string; problems: string | undefined }[];
  /** Problems beyond the loader's (names taken by plans not from Git), or the refusal. */
  problems: SourceProblem[];
  /** Set when nothing of the commit is applied: it breaks a cap (the loader's, or active plans per cluster). */
  refused?: SourceProblem;
}

export interface SyncLimits {
  /** PatchPlans active (not Completed, Failed or Cancelled) in the cluster that a commit may lead to. */
  maxActivePlans: number;
}

export const DEFAULT_SYNC_LIMITS: SyncLimits = { maxActivePlans: 200 };
const FINISHED = new Set(['Completed', 'Failed', 'Cancelled']);

export const formatSourceProblem = (p: SourceProblem): string =>
  `${p.file}:${p.line}:${p.column}: ${p.path === '' ? '' : `${p.path}: `}${p.message}`;

/** The spec Git owns: `paused` only when the file pauses the plan. */
export function appliedSpec(rawSpec: Record<string, unknown>): Record<string, unknown> {
  if (rawSpec.paused === true) return rawSpec;
  const { paused: _paused, ...rest } = rawSpec;
  return rest;
}

/** Drift: the cluster's spec differs from Git's in a field Git owns (paused counts only when Git pauses). */
export function hasDrift(
  gitSpec: Record<string, unknown>,
  rawSpec: Record<string, unknown>,
  clusterSpec: Record<string, unknown> | undefined,
): boolean {
  if (clusterSpec === undefined) return true;
  if (rawSpec.paused === true) return !sameValue(gitSpec, clusterSpec);
  const { paused: _g, ...git } = gitSpec;
  const { paused: _c, ...cluster } = clusterSpec;
  return !sameValue(git, cluster);
}

/**
 * Over a cap, the commit is refused as a whole: nothing applied, deleted or annotated, so a push
 * never half-applies. A commit that leads to more active plans than `maxActivePlans` is refused
 * only when it adds to their number: one that removes plans always goes through.
 */
export function decideSync(
  loaded: LoadedCommit,
  cluster: readonly ClusterPlan[],
  limits: SyncLimits = DEFAULT_SYNC_LIMITS,
): SyncDecision {
  if (loaded.refused) return refusal(loaded.refused);
  const out = decideAll(loaded, cluster);
  const before = cluster.filter((p) => !p.deleting && !FINISHED.has(p.phase ?? '')).length;
  const after = activeAfter(cluster, out);
  if (after.count > limits.maxActivePlans && after.count > before) {
    return refusal({
      file: after.first?.file ?? '',
      line: 1,
      column: 1,
      path: '',
      message: `over the cap of ${limits.maxActivePlans} active PatchPlans per cluster: this commit would make ${after.count} active (${before} now; Completed, Failed and Cancelled plans do not count): nothing of commit ${loaded.commit.slice(0, 12)} is applied; the plans applied before stay as they are`,
    });
  }
  return out;
}

function refusal(problem: SourceProblem): SyncDecision {
  return { apply: [], delete: [], annotateProblems: [], problems: [problem], refused: problem };
}

/** Active plans once the decision is carried out, and the first plan the commit starts (named in the message). */
function activeAfter(
  cluster: readonly ClusterPlan[],
  d: SyncDecision,
): { count: number; first: PlanApplyDecision | undefined } {
  // A created or changed plan (re)starts; the others keep their phase; deleted plans go.
  const starts = d.apply.filter((a) => a.reason === 'Created' || a.reason === 'Changed');
  const starting = new Set(starts.map((a) => a.name));
  const deleted = new Set(d.delete.map((x) => x.name));
  let count = starts.length;
  for (const p of cluster) {
    if (!p.deleting && !deleted.has(p.name) && !starting.has(p.name) && !FINISHED.has(p.phase ?? '')) count++;
  }
  return { count, first: starts[0] };
}

function decideAll(loaded: LoadedCommit, cluster: readonly ClusterPlan[]): SyncDecision {
  const out: SyncDecision = { apply: [], delete: [], annotateProblems: [], problems: [] };
  const byName = new Map(cluster.map((p) => [p.name, p]));
  for (const plan of loaded.plans) decideGitPlan(out, loaded.commit, plan, byName.get(plan.name));
  const inGit = new Set(loaded.plans.map((p) => p.name));
  const files: FilesOfCommit = { present: new Set(loaded.files), problemsByFile: groupByFile(loaded.problems) };
  for (const p of cluster) {
    if (p.managed && !inGit.has(p.name) && !p.deleting) decideLeftPlan(out, loaded, p, files);
  }
  // Specs that change first, annotation-only refreshes (NewCommit) last: a push that adds or edits
  // one plan must not wait behind one write per unchanged plan of the repository.
  out.apply.sort((a, b) => Number(a.reason === 'NewCommit') - Number(b.reason === 'NewCommit'));
  return out;
}

function decideGitPlan(out: SyncDecision, commit: string, plan: GitPlan, current: ClusterPlan | undefined): void {
  if (current && !current.managed) {
    out.problems.push({
      file: plan.file,
      line: 1,
      column: 1,
      path: 'metadata.name',
      message: `PatchPlan "${plan.name}" exists in the cluster but was not created from Git: delete it (kubectl delete patchplan ${plan.name}) or rename the plan`,
    });
    return;
  }
  if (current?.deleting) return; // applied again once its finalizer lets it go
  const reason = applyReason(commit, plan, current);
  if (reason)
    out.apply.push({
      name: plan.name,
      file: plan.file,
      reason,
      spec: appliedSpec(plan.rawSpec),
      ...(plan.labels ? { labels: plan.labels } : {}),
      specCommit: specCommitOf(reason, commit, plan, current),
    });
  if (current?.sourceProblems !== undefined) out.annotateProblems.push({ name: plan.name, problems: undefined });
}

/** The commit's files as a plan it no longer defines looks them up: which are there, and each one's problems. */
interface FilesOfCommit {
  present: ReadonlySet<string>;
  problemsByFile: ReadonlyMap<string, SourceProblem[]>;
}

/** A managed plan the commit does not define (valid): its file is still there but broken, or gone. */
function decideLeftPlan(
  out: SyncDecision,
  loaded: LoadedCommit,
  p: ClusterPlan,
  { present, problemsByFile }: FilesOfCommit,
): void {
  if (p.sourcePath !== undefined && present.has(p.sourcePath)) {
    // Keep the last good spec and say why.
    const text =
      (problemsByFile.get(p.sourcePath) ?? []).map(formatSourceProblem).join('; ') ||
      `${p.sourcePath} no longer defines PatchPlan "${p.name}"`;
    if (text !== p.sourceProblems) out.annotateProblems.push({ name: p.name, problems: text });
    return;
  }
  if (loaded.complete) out.delete.push({ name: p.name, uid: p.uid });
}

function applyReason(commit: string, plan: GitPlan, current: ClusterPlan | undefined): ApplyReason | undefined {
  if (!current) return 'Created';
  if (
    current.sourceCommit !== undefined &&
    current.sourceCommit !== commit &&
    hasDrift(plan.spec, plan.rawSpec, current.spec)
  )
    return 'Changed';
  if (hasDrift(plan.spec, plan.rawSpec, current.spec)) return 'DriftReverted';
  if (current.sourceCommit !== commit || current.sourcePath !== plan.file) return 'NewCommit';
  return undefined;
}

/**
 * The commit a plan's spec is named after (the rollout report's source commit and link). It moves
 * only when the plan's own file does: created, changed, or moved to another path (a link to the old
 * commit would not find the new path). A commit that leaves the file alone (NewCommit) or a reverted
 * hand edit keeps it, so a finished plan's report is not rewritten for every commit of the
 * repository. Plans synced before the annotation existed keep the commit their source-commit
 * named, which is what their reports already show: an upgrade rewrites no report.
 */
function specCommitOf(reason: ApplyReason, commit: string, plan: GitPlan, current: ClusterPlan | undefined): string {
  if (reason === 'Created' || reason === 'Changed' || current === undefined || current.sourcePath !== plan.file)
    return commit;
  return current.specCommit ?? current.sourceCommit ?? commit;
}

function groupByFile(problems: readonly SourceProblem[]): Map<string, SourceProblem[]> {
  const m = new Map<string, SourceProblem[]>();
  for (const p of problems) m.set(p.file, [...(m.get(p.file) ?? []), p]);
  return m;
}
