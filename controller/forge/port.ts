// The narrow forge interface the GitOps loop and the report writer use: pull requests and commit
// statuses, nothing else. GitHub (Octokit), Gitea/Forgejo and `none` (push only) implement it.
// Branch pushes are not here: they go through git (controller/gitops), not the forge API.
import type { OpContext } from '../runtime/context.js';

export type CommitState = 'pending' | 'success' | 'failure' | 'error';

export interface PullRequestView {
  number: number;
  url: string;
  state: 'open' | 'closed';
  merged: boolean;
  draft: boolean;
  title: string;
  /** Branch the PR merges from. */
  head: string;
  /** The commit the head branch pointed at when the forge answered; '' where unknown (the `none` forge). */
  headSha: string;
  /** Branch it merges into. */
  base: string;
  labels: string[];
}

export interface OpenPullRequest {
  head: string;
  base: string;
  title: string;
  body: string;
  draft: boolean;
  labels?: string[];
}

export interface ForgePort {
  /** `github`, `gitea` or `none`. */
  readonly kind: string;
  /** PRs (open and closed) whose head branch is `head`, newest first. */
  pullRequestsFor(ctx: OpContext, head: string): Promise<PullRequestView[]>;
  /** PRs whose head branch starts with `prefix` (open and closed), newest first. */
  pullRequestsWithPrefix(ctx: OpContext, prefix: string): Promise<PullRequestView[]>;
  openPullRequest(ctx: OpContext, pr: OpenPullRequest): Promise<PullRequestView>;
  updatePullRequest(
    ctx: OpContext,
    number: number,
    change: { title?: string; body?: string; state?: 'open' | 'closed' },
  ): Promise<PullRequestView>;
  /** Ready for review (`draft` false) or back to a draft (true): a draft cannot be merged. No write when it already is. */
  setDraft(ctx: OpContext, number: number, draft: boolean): Promise<void>;
  comment(ctx: OpContext, number: number, body: string): Promise<void>;
  setCommitStatus(
    ctx: OpContext,
    sha: string,
    status: { state: CommitState; context: string; description: string; targetUrl?: string },
  ): Promise<void>;
  /**
   * The paths a PR changes against its merge base, as the forge would merge them (a renamed file
   * gives both paths), at most `max` (GitHub lists no more than 3,000).
   */
  pullRequestFiles(ctx: OpContext, number: number, max?: number): Promise<string[]>;
  /** The statuses set on a commit, newest first (every one, not only the latest per context). */
  commitStatuses(ctx: OpContext, sha: string): Promise<CommitStatusView[]>;
}

export interface CommitStatusView {
  context: string;
  state: CommitState;
  description: string;
}

/** A commit status as either forge answers it (Gitea names the state `status`). */
export function commitStatusView(s: {
  context?: string | null | undefined;
  state?: string | undefined;
  status?: string | undefined;
  description?: string | null | undefined;
}): CommitStatusView {
  const state = s.state ?? s.status ?? 'error';
  return {
    context: s.context ?? '',
    state: (['pending', 'success', 'failure', 'error'].includes(state) ? state : 'error') as CommitState,
    description: s.description ?? '',
  };
}
