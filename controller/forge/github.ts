// ForgePort over Octokit (GitHub, GitHub Enterprise at `<host>/api/v3`, the lab forge). Octokit is
// the official client; its retry and throttling plugins already follow GitHub's guidance (rate-limit
// headers, secondary limits, one write at a time), which a hand-written fetch loop would re-implement.
// Only this folder imports octokit.
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit } from '@octokit/rest';
import type { OpContext } from '../runtime/context.js';
import { remainingMs } from '../runtime/context.js';
import type { LogFn } from '../runtime/log.js';
import { silentLog } from '../runtime/log.js';
import { z } from 'zod';
import { type Expect, checkedFetch } from './answer.js';
import { forgeError } from './errors.js';
import {
  commitStatusView,
  type CommitState,
  type CommitStatusView,
  type ForgePort,
  type OpenPullRequest,
  type PullRequestView,
} from './port.js';
import {
  acknowledgedShape,
  changedFileShape,
  commitStatusShape,
  githubPullShape,
  graphqlShape,
  type GitHubPull,
} from './shapes.js';

export interface GitHubForgeOptions {
  /** REST base: `https://api.github.com`, `https://ghe.example.com/api/v3`, or the lab forge's URL. */
  apiUrl: string;
  owner: string;
  repo: string;
  /** Read at every request, so a rotated token file is picked up without a restart. */
  token: () => Promise<string>;
  /** Where the token comes from (a file path), named in credential errors; never the token itself. */
  tokenSource: string;
  log?: LogFn;
  /** Called with the HTTP status of every answered request ('error' without one): the forge request metric. */
  onResponse?: (status: number | 'error') => void;
  /** Retries of idempotent requests on 5xx/network errors (plugin-retry); 3 by default. */
  retries?: number;
  /** Longest rate-limit wait handled inside one call; longer ones surface as Waiting. Default 60 s. */
  maxInlineWaitSeconds?: number;
}

/** GitHub's largest page. */
const PAGE = 100;
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

const PULL: Expect = { shape: githubPullShape, what: 'a pull request' };
const PULLS: Expect = { shape: z.array(githubPullShape), what: 'a list of pull requests' };
const ACK: Expect = { shape: acknowledgedShape, what: 'a JSON object' };
const GRAPHQL: Expect = { shape: graphqlShape, what: 'a GraphQL answer' };
const FILES: Expect = { shape: z.array(changedFileShape), what: 'a list of changed files' };
const STATUSES: Expect = { shape: z.array(commitStatusShape), what: 'a list of commit statuses' };

function pullView(p: GitHubPull): PullRequestView {
  return {
    number: p.number,
    url: p.html_url,
    state: p.state === 'closed' ? 'closed' : 'open',
    merged: p.merged_at !== null && p.merged_at !== undefined,
    draft: p.draft === true,
    title: p.title,
    head: p.head.ref,
    headSha: p.head.sha ?? '',
    base: p.base.ref,
    labels: p.labels.flatMap((l) => (l.name === undefined ? [] : [l.name])),
  };
}

const MARK_READY = `mutation MarkReady($pullRequestId: ID!) {
  markPullRequestReadyForReview(input: { pullRequestId: $pullRequestId }) { pullRequest { isDraft } }
}`;
const CONVERT_TO_DRAFT = `mutation ConvertToDraft($pullRequestId: ID!) {
  convertPullRequestToDraft(input: { pullRequestId: $pullRequestId }) { pullRequest { isDraft } }
}`;

export class GitHubForge implements ForgePort {
  readonly kind = 'github';
  private readonly octokit: Octokit;
  private readonly repoRef: { owner: string; repo: string };

  constructor(private readonly opts: GitHubForgeOptions) {
    const log = opts.log ?? silentLog;
    const maxWait = opts.maxInlineWaitSeconds ?? 60;
    const Kit = Octokit.plugin(retry, throttling);
    this.repoRef = { owner: opts.owner, repo: opts.repo };
    this.octokit = new Kit({
      baseUrl: opts.apiUrl.replace(/\/+$/, ''),
      userAgent: 'kangal-patch',
      // Every answer read at most MAX_FORGE_BODY bytes; each call adds the shape it expects.
      request: { fetch: checkedFetch(fetch) },
      // Octokit's own log would print request URLs only, but route it through ours anyway.
      log: {
        debug: () => undefined,
        info: () => undefined,
        warn: (m: string) => log('warn', m),
        error: (m: string) => log('error', m),
      },
      retry: { retries: opts.retries ?? 3 },
      throttle: {
        // A primary limit: wait inline when short and the request is idempotent; otherwise the
        // error reaches us and becomes Waiting with the reset time.
        onRateLimit: (after: number, o: { method: string }, _kit: unknown, retryCount: number) =>
          retryCount < 1 && after <= maxWait && IDEMPOTENT.has(o.method.toUpperCase()),
        // A secondary limit: GitHub asks every client to wait, writes included (nothing was done).
        onSecondaryRateLimit: (after: number, _o: unknown, _kit: unknown, retryCount: number) =>
          retryCount < 2 && after <= maxWait,
      },
    });
    this.octokit.hook.before('request', async (options) => {
      // The token is read per request and set as a header: never in a URL, never logged.
      options.headers.authorization = `token ${await opts.token()}`;
      // Only idempotent requests are retried on 5xx/network errors: a POST that timed out may have landed.
      if (!IDEMPOTENT.has(options.method.toUpperCase())) (options.request as { retries?: number }).retries = 0;
    });
    const counted = opts.onResponse;
    if (counted) {
      this.octokit.hook.after('request', (response) => counted(response.status));
      this.octokit.hook.error('request', (err) => {
        const status = (err as { status?: unknown }).status;
        counted(typeof status === 'number' ? status : 'error');
        throw err;
      });
    }
  }

  /** One call: cancelled with the context, its answers checked against `expect` (answer.ts), its failure an OutcomeError. */
  private call<T>(
    ctx: OpContext,
    what: string,
    expect: Expect,
    f: (request: { signal: AbortSignal; fetch: typeof fetch }) => Promise<T>,
  ): Promise<T> {
    const deadline = AbortSignal.timeout(Math.max(1, remainingMs(ctx)));
    const signal = AbortSignal.any([ctx.signal, deadline]);
    return f({ signal, fetch: checkedFetch(fetch, expect) }).catch((err: unknown) => {
      throw forgeError(err, what, {
        tokenSource: this.opts.tokenSource,
        now: ctx.clock.now(),
        aborted: ctx.signal.aborted,
        deadlineExceeded: deadline.aborted,
      });
    });
  }

  /**
   * Every page, newest first. Pages are walked here rather than with octokit.paginate, which passes
   * on only the method, URL and headers of a call: its pages would go without our signal and checks.
   */
  private async listPulls(ctx: OpContext, head: string | undefined): Promise<PullRequestView[]> {
    const what = head === undefined ? 'list pull requests' : `list pull requests of branch ${head}`;
    const out: PullRequestView[] = [];
    for (let page = 1; ; page++) {
      const res = await this.call(ctx, what, PULLS, (request) =>
        this.octokit.rest.pulls.list({
          ...this.repoRef,
          state: 'all',
          sort: 'created',
          direction: 'desc',
          per_page: PAGE,
          page,
          ...(head === undefined ? {} : { head: `${this.opts.owner}:${head}` }),
          request,
        }),
      );
      out.push(...res.data.map((p) => pullView(p as GitHubPull)));
      if (res.data.length < PAGE) return out;
    }
  }

  pullRequestsFor(ctx: OpContext, head: string): Promise<PullRequestView[]> {
    return this.listPulls(ctx, head);
  }

  async pullRequestsWithPrefix(ctx: OpContext, prefix: string): Promise<PullRequestView[]> {
    return (await this.listPulls(ctx, undefined)).filter((p) => p.head.startsWith(prefix));
  }

  async openPullRequest(ctx: OpContext, pr: OpenPullRequest): Promise<PullRequestView> {
    const created = await this.call(ctx, `open a pull request from ${pr.head}`, PULL, (request) =>
      this.octokit.rest.pulls.create({
        ...this.repoRef,
        head: pr.head,
        base: pr.base,
        title: pr.title,
        body: pr.body,
        draft: pr.draft,
        request,
      }),
    );
    const view = pullView(created.data);
    if (pr.labels && pr.labels.length > 0) {
      const labels = pr.labels;
      await this.call(ctx, `label pull request #${view.number}`, ACK, (request) =>
        this.octokit.rest.issues.addLabels({ ...this.repoRef, issue_number: view.number, labels, request }),
      );
      return { ...view, labels: [...new Set([...view.labels, ...labels])] };
    }
    return view;
  }

  async updatePullRequest(
    ctx: OpContext,
    number: number,
    change: { title?: string; body?: string; state?: 'open' | 'closed' },
  ): Promise<PullRequestView> {
    const res = await this.call(ctx, `update pull request #${number}`, PULL, (request) =>
      this.octokit.rest.pulls.update({ ...this.repoRef, pull_number: number, ...change, request }),
    );
    return pullView(res.data);
  }

  /** REST cannot change `draft` of an open PR; GitHub's GraphQL mutations markPullRequestReadyForReview and convertPullRequestToDraft can. */
  async setDraft(ctx: OpContext, number: number, draft: boolean): Promise<void> {
    const pull = await this.call(ctx, `read pull request #${number}`, PULL, (request) =>
      this.octokit.rest.pulls.get({ ...this.repoRef, pull_number: number, request }),
    );
    if ((pull.data.draft === true) === draft) return;
    const nodeId = pull.data.node_id;
    await this.call(
      ctx,
      draft ? `convert pull request #${number} to a draft` : `mark pull request #${number} ready for review`,
      GRAPHQL,
      (request) => this.octokit.graphql(draft ? CONVERT_TO_DRAFT : MARK_READY, { pullRequestId: nodeId, request }),
    );
  }

  async comment(ctx: OpContext, number: number, body: string): Promise<void> {
    await this.call(ctx, `comment on pull request #${number}`, ACK, (request) =>
      this.octokit.rest.issues.createComment({ ...this.repoRef, issue_number: number, body, request }),
    );
  }

  async setCommitStatus(
    ctx: OpContext,
    sha: string,
    status: { state: CommitState; context: string; description: string; targetUrl?: string },
  ): Promise<void> {
    await this.call(ctx, `set commit status ${status.context} on ${sha.slice(0, 12)}`, ACK, (request) =>
      this.octokit.rest.repos.createCommitStatus({
        ...this.repoRef,
        sha,
        state: status.state,
        context: status.context,
        // GitHub caps the description at 140 characters.
        description: status.description.length > 140 ? `${status.description.slice(0, 139)}…` : status.description,
        ...(status.targetUrl === undefined ? {} : { target_url: status.targetUrl }),
        request,
      }),
    );
  }

  async pullRequestFiles(ctx: OpContext, number: number, max = 3000): Promise<string[]> {
    const out: string[] = [];
    for (let page = 1; out.length < max; page++) {
      const res = await this.call(ctx, `list the files of pull request #${number}`, FILES, (request) =>
        this.octokit.rest.pulls.listFiles({ ...this.repoRef, pull_number: number, per_page: PAGE, page, request }),
      );
      for (const f of res.data) out.push(...(f.previous_filename ? [f.previous_filename, f.filename] : [f.filename]));
      if (res.data.length < PAGE) break;
    }
    return out.slice(0, max);
  }

  async commitStatuses(ctx: OpContext, sha: string): Promise<CommitStatusView[]> {
    const out: CommitStatusView[] = [];
    for (let page = 1; page <= 10; page++) {
      const res = await this.call(ctx, `list the statuses of ${sha.slice(0, 12)}`, STATUSES, (request) =>
        this.octokit.rest.repos.listCommitStatusesForRef({ ...this.repoRef, ref: sha, per_page: PAGE, page, request }),
      );
      out.push(...res.data.map((s) => commitStatusView(s)));
      if (res.data.length < PAGE) break;
    }
    return out;
  }
}
