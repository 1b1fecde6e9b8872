// The `none` forge: no pull-request API. The report writer still pushes its branch; PR calls do
// nothing and report that no PR exists, so callers need no special case.
import type { CommitStatusView, ForgePort, PullRequestView } from './port.js';

export class NoForge implements ForgePort {
  readonly kind = 'none';
  pullRequestsFor(): Promise<PullRequestView[]> {
    return Promise.resolve([]);
  }
  pullRequestsWithPrefix(): Promise<PullRequestView[]> {
    return Promise.resolve([]);
  }
  /** A placeholder view (number 0): nothing was opened. */
  openPullRequest(
    _ctx: unknown,
    pr: { head: string; base: string; title: string; draft: boolean; labels?: string[] },
  ): Promise<PullRequestView> {
    return Promise.resolve({
      number: 0,
      url: '',
      state: 'open',
      merged: false,
      draft: pr.draft,
      title: pr.title,
      head: pr.head,
      headSha: '',
      base: pr.base,
      labels: pr.labels ?? [],
    });
  }
  updatePullRequest(_ctx: unknown, number: number, change: { title?: string }): Promise<PullRequestView> {
    return Promise.resolve({
      number,
      url: '',
      state: 'open',
      merged: false,
      draft: false,
      title: change.title ?? '',
      head: '',
      headSha: '',
      base: '',
      labels: [],
    });
  }
  setDraft(): Promise<void> {
    return Promise.resolve();
  }
  comment(): Promise<void> {
    return Promise.resolve();
  }
  setCommitStatus(): Promise<void> {
    return Promise.resolve();
  }
  pullRequestFiles(): Promise<string[]> {
    return Promise.resolve([]);
  }
  commitStatuses(): Promise<CommitStatusView[]> {
    return Promise.resolve([]);
  }
}
