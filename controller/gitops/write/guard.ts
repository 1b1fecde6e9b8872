// The forge side of "branches the controller writes are its own" (core/gitops/bot-branch.ts): the
// commit status that records a commit as KangalPatch's, and the check of a pull request's files
// before it may be marked ready.
import { branchVerdict, foreignFiles, isRecordedCommit, recordDescription } from '../../core/gitops/bot-branch.js';
import type { ForgePort, PullRequestView } from '../../forge/port.js';
import { followThrough, type OpContext } from '../../runtime/context.js';

export interface BranchGuard {
  forge: ForgePort;
  /** The commit-status context: `kangal-patch/<cluster>/report`, `.../auto-update`. */
  context: string;
  /** What the branch holds, in descriptions and comments: `rollout report`, `proposal`. */
  what: string;
  /** Of the paths given, those the branch holds exactly as the base does (BranchWriter.sameOnBase). */
  sameOnBase?:
    ((ctx: OpContext, branch: string, base: string, paths: readonly string[]) => Promise<string[]>) | undefined;
}

/** How long the record of a pushed commit may take once the pass that pushed it is cancelled. */
const RECORD_MS = 15_000;

/**
 * Records `sha` as written by KangalPatch: a pending status under the guard's context. Nothing with
 * the `none` forge. Called right after the push, it is written even when the pass is being cancelled
 * (a handover, a shutdown): unrecorded, the next leader would take the commit for a human edit of
 * the report and stop updating it.
 */
export async function recordCommit(ctx: OpContext, g: BranchGuard, sha: string): Promise<void> {
  if (g.forge.kind === 'none') return;
  await g.forge.setCommitStatus(followThrough(ctx, RECORD_MS), sha, {
    state: 'pending',
    context: g.context,
    description: recordDescription(`its ${g.what}, checked before the pull request is marked ready`),
  });
}

/** Whether `sha` carries KangalPatch's record (see recordCommit). */
export async function isRecorded(ctx: OpContext, g: BranchGuard, sha: string): Promise<boolean> {
  if (g.forge.kind === 'none') return false;
  return isRecordedCommit(await g.forge.commitStatuses(ctx, sha), g.context);
}

export interface GuardOutcome {
  /** Files the PR changes outside `own`: the PR must not be (or stay) ready. */
  foreign: string[];
  /** Pass back as `noted` next time (one comment per set of foreign files). */
  noted: string | undefined;
}

export interface GuardInput {
  /** The files the branch may change. */
  own: readonly string[];
  /** GuardOutcome.noted of the previous check of this PR. */
  noted: string | undefined;
  /** What the caller does about foreign files, for the comment. */
  consequence: string;
}

/**
 * Checks what a PR would merge: only `own` files, or the foreign ones are named in one comment and
 * the head's status fails. `consequence` says what the caller does about it (in the comment).
 */
export async function guardPullRequest(
  ctx: OpContext,
  g: BranchGuard,
  pr: PullRequestView,
  { own, noted, consequence }: GuardInput,
): Promise<GuardOutcome> {
  if (g.forge.kind === 'none' || pr.number === 0) return { foreign: [], noted: undefined };
  const listed = await g.forge.pullRequestFiles(ctx, pr.number);
  // A file the forge lists but whose content the base already has is no change a merge brings
  // (the base's history was rewritten under the branch): not held against the PR.
  const outside = foreignFiles(listed, own);
  const kept =
    outside.length > 0 && g.sameOnBase
      ? new Set(await g.sameOnBase(ctx, pr.head, pr.base, outside))
      : new Set<string>();
  const changed = listed.filter((f) => !kept.has(f));
  const headStatuses = pr.headSha === '' ? [] : await g.forge.commitStatuses(ctx, pr.headSha);
  const v = branchVerdict({ changed, own, context: g.context, headStatuses, noted, what: g.what, consequence });
  if (v.comment !== undefined) await g.forge.comment(ctx, pr.number, v.comment);
  if (v.status && pr.headSha !== '')
    await g.forge.setCommitStatus(ctx, pr.headSha, { ...v.status, context: g.context });
  return { foreign: v.foreign, noted: v.noted };
}
