// ForgePort over the Gitea REST API v1 (Gitea and Forgejo, which keeps the same API), with plain
// fetch: the official Gitea SDK is Go-only, and the calls we need are six. Shapes follow Gitea's
// published OpenAPI description (templates/swagger in code.gitea.io/gitea), which the lab forge
// checks every request and response against.
//
// Differences from GitHub the rest of KangalPatch never sees:
// - Drafts are "work in progress" titles: a PR whose title starts with `WIP:` is a draft. We open
//   drafts with that prefix, keep it through title updates, drop it to mark ready for review and
//   add it back to make a draft again; the views carry the title without it.
// - Labels are attached by ID: names are looked up (and created when missing) first.
// Nothing is retried in here (a POST that timed out may have landed): failures become
// OutcomeErrors and the work queue decides.
import { z } from 'zod';
import { remainingMs, type OpContext } from '../runtime/context.js';
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
  giteaLabelShape,
  giteaPullShape,
  type GiteaPull,
} from './shapes.js';

export interface GiteaForgeOptions {
  /** REST base including `/api/v1`: `https://gitea.example.com/api/v1`. */
  apiUrl: string;
  owner: string;
  repo: string;
  /** Read at every request, so a rotated token file is picked up without a restart. */
  token: () => Promise<string>;
  /** Where the token comes from (a file path), named in credential errors; never the token itself. */
  tokenSource: string;
  /** Called with the HTTP status of every answered request ('error' without one): the forge request metric. */
  onResponse?: (status: number | 'error') => void;
  fetch?: typeof fetch;
}

/** Gitea's default WORK_IN_PROGRESS_PREFIXES are `WIP:` and `[WIP]`, matched case-insensitively. */
const WIP = /^(?:WIP:|\[WIP\])\s*/i;
const WIP_PREFIX = 'WIP: ';
/** Gitea's default MAX_RESPONSE_ITEMS: a larger `limit` is cut to it. */
const PAGE = 50;
const LABEL_COLOR = '#0e8a16';
/** Gitea stores more, but its UI shows a line; GitHub's limit keeps both forges alike. */
const DESCRIPTION_MAX = 140;

const PULL: Expect = { shape: giteaPullShape, what: 'a pull request' };
/** Gitea answers `null` for an empty list. */
const PULLS: Expect = { shape: z.array(giteaPullShape).nullable(), what: 'a list of pull requests' };
const LABELS: Expect = { shape: z.array(giteaLabelShape).nullable(), what: 'a list of labels' };
const LABEL: Expect = { shape: giteaLabelShape, what: 'a label' };
const ACK: Expect = { shape: acknowledgedShape, what: 'a JSON object' };
const FILES: Expect = { shape: z.array(changedFileShape).nullable(), what: 'a list of changed files' };
const STATUSES: Expect = { shape: z.array(commitStatusShape).nullable(), what: 'a list of commit statuses' };

export function giteaPullView(p: GiteaPull): PullRequestView {
  const wip = WIP.test(p.title);
  return {
    number: p.number,
    url: p.html_url,
    state: p.state === 'closed' ? 'closed' : 'open',
    merged: p.merged === true || (p.merged_at !== null && p.merged_at !== undefined),
    draft: p.draft === true || wip,
    title: p.title.replace(WIP, ''),
    head: p.head.ref,
    headSha: p.head.sha ?? '',
    base: p.base.ref,
    labels: (p.labels ?? []).flatMap((l) => (l.name === undefined ? [] : [l.name])),
  };
}

/** An HTTP answer that is not 2xx, shaped as forgeError reads it (status, headers, the request). */
class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly response: { headers: Record<string, string> },
    readonly request: { method: string; url: string },
  ) {
    super(`HTTP ${status}`);
  }
}

/** One request: what it does (named in errors), what a 2xx answer must be, and the request itself. */
interface GiteaCall {
  what: string;
  expect: Expect;
  method: string;
  path: string;
  body?: unknown;
}

/** A GET of a list endpoint, read page by page up to `maxPages` (all pages when absent). */
interface GiteaListCall {
  what: string;
  expect: Expect;
  path: string;
  maxPages?: number;
}

export class GiteaForge implements ForgePort {
  readonly kind = 'gitea';
  private readonly base: string;
  private readonly fetch: typeof fetch;
  /** Label name → ID in this repository; filled on first use, reset when a label call fails. */
  private labelIds: Map<string, number> | undefined;

  constructor(private readonly opts: GiteaForgeOptions) {
    this.base = `${opts.apiUrl.replace(/\/+$/, '')}/repos/${encodeURIComponent(opts.owner)}/${encodeURIComponent(opts.repo)}`;
    this.fetch = opts.fetch ?? fetch;
  }

  /** One request; a 2xx answer is checked against `expect` (answer.ts) before it is returned as T. */
  private async request<T>(ctx: OpContext, call: GiteaCall): Promise<{ data: T; headers: Headers }> {
    const { what, expect, method, path, body } = call;
    const deadline = AbortSignal.timeout(Math.max(1, remainingMs(ctx)));
    const signal = AbortSignal.any([ctx.signal, deadline]);
    const url = `${this.base}${path}`;
    try {
      const res = await checkedFetch(this.fetch, expect)(url, {
        method,
        signal,
        headers: {
          // The token only ever travels in this header: never in a URL, never logged.
          authorization: `token ${await this.opts.token()}`,
          accept: 'application/json',
          'user-agent': 'kangal-patch',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      this.opts.onResponse?.(res.status);
      if (!res.ok) {
        await res.body?.cancel();
        throw new HttpError(res.status, { headers: Object.fromEntries(res.headers.entries()) }, { method, url });
      }
      const text = await res.text();
      return { data: (text === '' ? undefined : JSON.parse(text)) as T, headers: res.headers };
    } catch (err) {
      if (!(err instanceof HttpError)) this.opts.onResponse?.('error');
      throw forgeError(err, what, {
        tokenSource: this.opts.tokenSource,
        now: ctx.clock.now(),
        aborted: ctx.signal.aborted,
        deadlineExceeded: deadline.aborted,
      });
    }
  }

  /** Every page of a list endpoint (Gitea pages are 1-based; a short page is the last). */
  private async list<T>(ctx: OpContext, call: GiteaListCall): Promise<T[]> {
    const { what, expect, path, maxPages = Infinity } = call;
    const out: T[] = [];
    for (let page = 1; page <= maxPages; page++) {
      const sep = path.includes('?') ? '&' : '?';
      const { data } = await this.request<T[] | null>(ctx, {
        what,
        expect,
        method: 'GET',
        path: `${path}${sep}page=${page}&limit=${PAGE}`,
      });
      const items = data ?? [];
      out.push(...items);
      if (items.length < PAGE) return out;
    }
    return out;
  }

  private async allPulls(ctx: OpContext, what: string): Promise<PullRequestView[]> {
    const pulls = await this.list<GiteaPull>(ctx, { what, expect: PULLS, path: '/pulls?state=all' });
    return pulls.map(giteaPullView).sort((a, b) => b.number - a.number);
  }

  async pullRequestsFor(ctx: OpContext, head: string): Promise<PullRequestView[]> {
    // Gitea's list has no head filter, and its by-branch lookup returns one PR only.
    return (await this.allPulls(ctx, `list pull requests of branch ${head}`)).filter((p) => p.head === head);
  }

  async pullRequestsWithPrefix(ctx: OpContext, prefix: string): Promise<PullRequestView[]> {
    return (await this.allPulls(ctx, 'list pull requests')).filter((p) => p.head.startsWith(prefix));
  }

  private async getPull(ctx: OpContext, number: number): Promise<GiteaPull> {
    return (
      await this.request<GiteaPull>(ctx, {
        what: `read pull request #${number}`,
        expect: PULL,
        method: 'GET',
        path: `/pulls/${number}`,
      })
    ).data;
  }

  /** IDs of the named labels, creating the missing ones (Gitea attaches labels by ID only). */
  private async labelIdsFor(ctx: OpContext, names: readonly string[]): Promise<number[]> {
    try {
      if (!this.labelIds) {
        const labels = await this.list<{ id: number; name: string }>(ctx, {
          what: 'list labels',
          expect: LABELS,
          path: '/labels',
        });
        this.labelIds = new Map(labels.map((l) => [l.name, l.id]));
      }
      const ids: number[] = [];
      for (const name of names) {
        let id = this.labelIds.get(name);
        if (id === undefined) {
          id = (
            await this.request<{ id: number }>(ctx, {
              what: `create label ${name}`,
              expect: LABEL,
              method: 'POST',
              path: '/labels',
              body: { name, color: LABEL_COLOR },
            })
          ).data.id;
          this.labelIds.set(name, id);
        }
        ids.push(id);
      }
      return ids;
    } catch (err) {
      // Someone may have created or deleted a label meanwhile: read them again next time.
      this.labelIds = undefined;
      throw err;
    }
  }

  async openPullRequest(ctx: OpContext, pr: OpenPullRequest): Promise<PullRequestView> {
    const labels = pr.labels && pr.labels.length > 0 ? await this.labelIdsFor(ctx, pr.labels) : undefined;
    const { data } = await this.request<GiteaPull>(ctx, {
      what: `open a pull request from ${pr.head}`,
      expect: PULL,
      method: 'POST',
      path: '/pulls',
      body: {
        head: pr.head,
        base: pr.base,
        title: pr.draft ? `${WIP_PREFIX}${pr.title}` : pr.title,
        body: pr.body,
        ...(labels ? { labels } : {}),
      },
    });
    return giteaPullView(data);
  }

  async updatePullRequest(
    ctx: OpContext,
    number: number,
    change: { title?: string; body?: string; state?: 'open' | 'closed' },
  ): Promise<PullRequestView> {
    let title = change.title;
    // A new title must keep a draft a draft.
    if (title !== undefined && WIP.test((await this.getPull(ctx, number)).title)) title = `${WIP_PREFIX}${title}`;
    const { data } = await this.request<GiteaPull>(ctx, {
      what: `update pull request #${number}`,
      expect: PULL,
      method: 'PATCH',
      path: `/pulls/${number}`,
      body: {
        ...(title === undefined ? {} : { title }),
        ...(change.body === undefined ? {} : { body: change.body }),
        ...(change.state === undefined ? {} : { state: change.state }),
      },
    });
    return giteaPullView(data);
  }

  async setDraft(ctx: OpContext, number: number, draft: boolean): Promise<void> {
    const pull = await this.getPull(ctx, number);
    if (WIP.test(pull.title) === draft) return;
    const title = draft ? `${WIP_PREFIX}${pull.title}` : pull.title.replace(WIP, '');
    await this.request(ctx, {
      what: draft ? `convert pull request #${number} to a draft` : `mark pull request #${number} ready for review`,
      expect: PULL,
      method: 'PATCH',
      path: `/pulls/${number}`,
      body: { title },
    });
  }

  async comment(ctx: OpContext, number: number, body: string): Promise<void> {
    await this.request(ctx, {
      what: `comment on pull request #${number}`,
      expect: ACK,
      method: 'POST',
      path: `/issues/${number}/comments`,
      body: { body },
    });
  }

  async setCommitStatus(
    ctx: OpContext,
    sha: string,
    status: { state: CommitState; context: string; description: string; targetUrl?: string },
  ): Promise<void> {
    await this.request(ctx, {
      what: `set commit status ${status.context} on ${sha.slice(0, 12)}`,
      expect: ACK,
      method: 'POST',
      path: `/statuses/${encodeURIComponent(sha)}`,
      body: {
        state: status.state,
        context: status.context,
        description:
          status.description.length > DESCRIPTION_MAX
            ? `${status.description.slice(0, DESCRIPTION_MAX - 1)}…`
            : status.description,
        ...(status.targetUrl === undefined ? {} : { target_url: status.targetUrl }),
      },
    });
  }

  async pullRequestFiles(ctx: OpContext, number: number, max = 3000): Promise<string[]> {
    const files = await this.list<{ filename: string; previous_filename?: string | null }>(ctx, {
      what: `list the files of pull request #${number}`,
      expect: FILES,
      path: `/pulls/${number}/files`,
      maxPages: Math.ceil(max / PAGE),
    });
    return files.flatMap((f) => (f.previous_filename ? [f.previous_filename, f.filename] : [f.filename])).slice(0, max);
  }

  async commitStatuses(ctx: OpContext, sha: string): Promise<CommitStatusView[]> {
    const statuses = await this.list<{ context?: string | null; status?: string; description?: string | null }>(ctx, {
      what: `list the statuses of ${sha.slice(0, 12)}`,
      expect: STATUSES,
      path: `/commits/${encodeURIComponent(sha)}/statuses`,
      maxPages: 10,
    });
    return statuses.map((s) => commitStatusView(s));
  }
}
