// The GitHub REST subset of the lab forge. Every request is resolved to an operation of GitHub's
// OpenAPI description and validated before a handler sees it; every response is validated before
// it is sent. Failures of either are recorded as contract violations.
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createGunzip } from 'node:zlib';
import { dispatch, type Reply, type Surface, type ViolationKind } from './dispatch.js';
import { ForgeContract, type Operation } from './openapi.js';
import { changedFiles, git, mergeInBare, resolveRef, runGit } from './git.js';
import { now, Shapes, type PullDetails, type PullState, type ReleaseState, type RepoState } from './shapes.js';

export interface RecordedRequest {
  method: string;
  path: string;
  operationId: string | undefined;
  query: Record<string, unknown>;
  body: unknown;
  status: number;
}

export interface Violation {
  /** `request`: GitHub would reject it; `response`: the fake answered off-contract; `route`: no such GitHub operation; `unimplemented`: a GitHub operation the fake lacks. */
  kind: ViolationKind;
  method: string;
  path: string;
  operationId: string | undefined;
  errors: string[];
}

interface Ctx {
  repo: RepoState;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
}

type Handler = (ctx: Ctx) => Promise<Reply> | Reply;

export interface AddReleaseOptions {
  name?: string;
  body?: string;
  prerelease?: boolean;
  draft?: boolean;
  /** ISO timestamp; now by default. */
  publishedAt?: string;
  targetCommitish?: string;
}

const DOCS = 'https://docs.github.com/rest';
const RATE_LIMIT_DOCS = 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api';

/** The primary rate limit of the token (GitHub's `core` resource), as x-ratelimit-* headers report it. */
export interface RateLimitState {
  limit: number;
  remaining: number;
  /** epoch seconds */
  reset: number;
}

function notFound(): Reply {
  return { status: 404, body: { message: 'Not Found', documentation_url: DOCS, status: '404' } };
}

function invalid(message: string, errors: Record<string, unknown>[] = []): Reply {
  return { status: 422, body: { message, errors, documentation_url: DOCS, status: '422' } };
}

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const source = /gzip/i.test(req.headers['content-encoding'] ?? '') ? req.pipe(createGunzip()) : req;
  const chunks: Buffer[] = [];
  for await (const chunk of source) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The query string as OpenAPI parameters see it: a repeated key becomes an array. */
export function queryOf(url: URL): Record<string, unknown> {
  const query: Record<string, unknown> = {};
  for (const [k, v] of url.searchParams) {
    const prev = query[k] as string | string[] | undefined;
    query[k] = prev === undefined ? v : [...(Array.isArray(prev) ? prev : [prev]), v];
  }
  return query;
}

/** The request's If-None-Match lists `etag`. */
function notModified(req: IncomingMessage, etag: string): boolean {
  return (req.headers['if-none-match'] ?? '').split(',').some((t) => t.trim() === etag);
}

/** The GitHub GraphQL mutation this fake implements, its PR node id (undefined for any other query) and the query as read. */
function graphqlMutation(parsed: { query?: unknown; variables?: Record<string, unknown> }): {
  q: string;
  id: unknown;
  mutation: string;
} {
  const q = typeof parsed.query === 'string' ? parsed.query.replace(/\s+/g, ' ') : '';
  const shape =
    /^mutation(?: \w+)? ?\( ?\$(\w+): ID! ?\) ?\{ ?(markPullRequestReadyForReview|convertPullRequestToDraft) ?\( ?input: ?\{ ?pullRequestId: ?\$(\w+) ?\} ?\) ?\{ ?pullRequest ?\{ ?isDraft ?\} ?\} ?\} ?$/.exec(
      q.trim(),
    );
  const id = shape && shape[1] === shape[3] ? parsed.variables?.[shape[1] ?? ''] : undefined;
  const mutation = shape?.[2] ?? '';
  return { q, id, mutation };
}

/** The merge commit's message: the request's title and message, or GitHub's defaults for the merge method. */
function mergeMessage(r: RepoState, p: PullState, body: Record<string, unknown>, squash: boolean): string {
  const title =
    (body.commit_title as string | undefined) ??
    (squash ? `${p.title} (#${p.number})` : `Merge pull request #${p.number} from ${r.owner}/${p.headRef}`);
  const extra = (body.commit_message as string | undefined) ?? (squash ? '' : p.title);
  return extra ? `${title}\n\n${extra}` : title;
}

/** GitHub filters pull requests by `user:ref-name`; a head without an owner matches nothing. */
function headFilter(repoOwner: string, head: string): (p: PullState) => boolean {
  const colon = head.indexOf(':');
  const owner = colon < 0 ? '' : head.slice(0, colon);
  const ref = colon < 0 ? head : head.slice(colon + 1);
  return (p) => owner.toLowerCase() === repoOwner.toLowerCase() && p.headRef === ref;
}

export class ForgeApi {
  readonly requests: RecordedRequest[] = [];
  readonly violations: Violation[] = [];
  private readonly repos = new Map<string, RepoState>();
  /** GitHub's JSON shapes (the Gitea surface shares its user ids). */
  readonly shapes: Shapes;
  private readonly contract: Promise<ForgeContract>;
  /** The user every write is attributed to (the token's owner). */
  readonly login: string;
  private seq = 1000;
  private readonly handlers: Record<string, Handler>;
  private rateLimit: RateLimitState = { limit: 5000, remaining: 5000, reset: Math.floor(Date.now() / 1000) + 3600 };

  constructor(opts: { baseUrl: () => string; login?: string }) {
    this.shapes = new Shapes(opts.baseUrl);
    this.login = opts.login ?? 'kangal-lab';
    this.contract = ForgeContract.load('github');
    this.handlers = {
      'repos/get': (c) => this.getRepo(c),
      'pulls/create': (c) => this.createPull(c),
      'pulls/list': (c) => this.listPulls(c),
      'pulls/get': (c) => this.getPull(c),
      'pulls/update': (c) => this.updatePull(c),
      'pulls/merge': (c) => this.mergePull(c),
      'pulls/list-files': (c) =>
        this.withPull(c, async (p) => {
          await this.refreshHead(c.repo, p);
          const files = await changedFiles(c.repo.bareDir, await this.baseSha(c.repo, p), p.headSha);
          return this.page(
            c,
            files.map((f) => this.shapes.diffEntry(c.repo, p.headSha, f)),
          );
        }),
      'pulls/check-if-merged': (c) =>
        this.withPull(c, (p) => ({ status: p.mergedAt ? 204 : 404, body: p.mergedAt ? undefined : notFound().body })),
      'issues/add-labels': (c) => this.addLabels(c),
      'issues/set-labels': (c) => this.addLabels(c, true),
      'issues/list-labels-on-issue': (c) => this.withPull(c, (p) => ({ status: 200, body: this.labelsOf(c.repo, p) })),
      'issues/remove-label': (c) => this.removeLabel(c),
      'issues/create-comment': (c) => this.createComment(c),
      'issues/list-comments': (c) => this.listComments(c),
      'repos/create-commit-status': (c) => this.createStatus(c),
      'repos/list-commit-statuses-for-ref': (c) => this.listStatuses(c),
      'repos/list-releases': (c) =>
        this.page(
          c,
          this.visibleReleases(c.repo).map((r) => this.shapes.release(c.repo, r)),
        ),
      'repos/get-latest-release': (c) => this.latestRelease(c),
      'repos/get-release-by-tag': (c) => {
        const rel = c.repo.releases.find((r) => r.tagName === c.params.tag);
        return rel ? { status: 200, body: this.shapes.release(c.repo, rel) } : notFound();
      },
      'repos/create-release': (c) => this.createRelease(c),
    };
  }

  /** Resolves once GitHub's OpenAPI description is loaded. */
  async ready(): Promise<void> {
    await this.contract;
  }

  get implementedOperations(): string[] {
    return Object.keys(this.handlers);
  }

  /** The shared store, for the Gitea surface: one repository, as both surfaces see it. */
  repo(owner: string, name: string): RepoState | undefined {
    return this.repos.get(`${owner}/${name}`.toLowerCase());
  }

  /** The next id of the shared store (PRs, labels, comments, statuses: ids never repeat across surfaces). */
  nextId(): number {
    return ++this.seq;
  }

  hasRepo(owner: string, name: string): boolean {
    return this.repos.has(`${owner}/${name}`.toLowerCase());
  }

  registerRepo(owner: string, name: string, defaultBranch: string, bareDir: string): void {
    const key = `${owner}/${name}`.toLowerCase();
    if (this.repos.has(key)) throw new Error(`repository ${owner}/${name} already exists`);
    this.repos.set(key, {
      owner,
      name,
      id: ++this.seq,
      defaultBranch,
      bareDir,
      createdAt: now(),
      nextNumber: 1,
      pulls: new Map(),
      labels: new Map(),
      comments: [],
      statuses: [],
      releases: [],
    });
  }

  /** Adds a release directly (the Talos release feed), as if published on GitHub. */
  addRelease(owner: string, name: string, tagName: string, opts: AddReleaseOptions = {}): void {
    const repo = this.repos.get(`${owner}/${name}`.toLowerCase());
    if (!repo) throw new Error(`no repository ${owner}/${name}`);
    const at = opts.publishedAt ?? now();
    repo.releases.push({
      id: ++this.seq,
      tagName,
      targetCommitish: opts.targetCommitish ?? repo.defaultBranch,
      name: opts.name ?? tagName,
      body: opts.body ?? null,
      draft: opts.draft ?? false,
      prerelease: opts.prerelease ?? false,
      user: this.login,
      createdAt: at,
      publishedAt: opts.draft ? null : at,
    });
  }

  /**
   * Sets the primary rate limit, as GitHub would after that many requests: every response carries
   * x-ratelimit-* headers; with nothing remaining, requests get GitHub's 403 "API rate limit
   * exceeded" until `reset` (then the limit is full again). Conditional requests answered 304 cost nothing.
   */
  setRateLimit(limit: Partial<RateLimitState>): void {
    this.rateLimit = { ...this.rateLimit, ...limit };
  }

  /** GitHub's 403 while the primary rate limit is exhausted. */
  private rateLimited(): Reply | undefined {
    if (this.rateLimit.remaining > 0 || Date.now() / 1000 >= this.rateLimit.reset) return undefined;
    this.rateLimit.remaining = 1; // send() counts this answer too
    return {
      status: 403,
      body: {
        message:
          'API rate limit exceeded for installation. If you reach out to GitHub Support for help, please include the request ID.',
        documentation_url: RATE_LIMIT_DOCS,
        status: '403',
      },
    };
  }

  private rateLimitHeaders(): Record<string, string> {
    const r = this.rateLimit;
    if (r.remaining <= 0 && Date.now() / 1000 >= r.reset)
      this.rateLimit = { ...r, remaining: r.limit, reset: Math.floor(Date.now() / 1000) + 3600 };
    const { limit, remaining, reset } = this.rateLimit;
    return {
      'x-ratelimit-limit': String(limit),
      'x-ratelimit-remaining': String(Math.max(0, remaining)),
      'x-ratelimit-used': String(limit - Math.max(0, remaining)),
      'x-ratelimit-reset': String(reset),
      'x-ratelimit-resource': 'core',
    };
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const contract = await this.contract;
    const method = (req.method ?? 'GET').toUpperCase();
    const path = url.pathname.replace(/^\/api\/v3(?=\/)/, '').replace(/(.)\/$/, '$1');
    const query = queryOf(url);
    const raw = await readBody(req);
    const record: RecordedRequest = {
      method,
      path,
      operationId: undefined,
      query: { ...query },
      body: undefined,
      status: 0,
    };
    this.requests.push(record);
    const send = (reply: Reply, op?: Operation): void => {
      let { status, body } = reply;
      if (op) {
        const errors = contract.validateResponse(op, status, body);
        if (errors.length > 0) {
          this.violations.push({ kind: 'response', method, path, operationId: op.operationId, errors });
          status = 500;
          body = { message: `lab forge answered off-contract: ${errors.join('; ')}` };
        }
      }
      // Conditional requests (GitHub: every GET carries an ETag; a matching If-None-Match gets 304
      // without a body and does not count against the rate limit). The 200 body was checked above.
      const etag =
        method === 'GET' && status === 200 && body !== undefined
          ? `W/"${createHash('sha256').update(JSON.stringify(body)).digest('hex')}"`
          : undefined;
      if (etag !== undefined && notModified(req, etag)) {
        status = 304;
        body = undefined;
      }
      if (status !== 304) this.rateLimit.remaining--;
      record.status = status;
      const headers: Record<string, string> = {
        ...reply.headers,
        'x-github-media-type': 'github.v3; format=json',
        ...this.rateLimitHeaders(),
        ...(etag === undefined ? {} : { etag }),
      };
      if (status === 304) delete headers.link;
      if (body === undefined) {
        res.writeHead(status, headers);
        res.end();
        return;
      }
      res.writeHead(status, { ...headers, 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(body));
    };

    const limited = this.rateLimited();
    if (limited) {
      send(limited, contract.match(method, path)?.op);
      return;
    }
    const surface: Surface = {
      contract,
      notAnOperation: `${method} ${path} is not an operation of api.github.com`,
      handle: (id) => {
        const h = this.handlers[id];
        return h && ((c) => h({ ...c, query }));
      },
      repo: (owner, name) => this.repos.get(`${owner}/${name}`.toLowerCase()),
      violation: (kind, operationId, errors) => this.violations.push({ kind, method, path, operationId, errors }),
      refuse: {
        route: notFound,
        badJson: () => ({
          status: 400,
          body: { message: 'Problems parsing JSON', documentation_url: DOCS, status: '400' },
        }),
        invalid: (errors) => invalid(`Invalid request.\n\n${errors.join('\n')}`),
        noRepo: notFound,
      },
    };
    const { reply, op } = await dispatch(surface, { matched: contract.match(method, path), query, raw }, record);
    send(reply, op);
  }

  // ---- GraphQL: the one mutation REST lacks (a draft PR cannot be marked ready over REST)

  /**
   * POST /graphql (and GHES' /api/graphql): only `markPullRequestReadyForReview(input: {pullRequestId})`
   * and `convertPullRequestToDraft(input: {pullRequestId})` with the PR's node_id in a variable, as
   * GitHub's GraphQL schema defines them. Anything else is a
   * `route` violation: the REST OpenAPI description cannot check GraphQL, so the fake accepts nothing
   * it was not written for.
   */
  async handleGraphql(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const record: RecordedRequest = {
      method: 'POST',
      path: '/graphql',
      operationId: undefined,
      query: {},
      body: undefined,
      status: 0,
    };
    this.requests.push(record);
    const reply = (status: number, body: unknown): void => {
      record.status = status;
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(body));
    };
    let parsed: { query?: unknown; variables?: Record<string, unknown> };
    try {
      parsed = JSON.parse(raw.toString('utf8')) as typeof parsed;
      record.body = parsed;
    } catch {
      this.violations.push({
        kind: 'request',
        method: 'POST',
        path: '/graphql',
        operationId: undefined,
        errors: ['body is not JSON'],
      });
      reply(400, { message: 'Problems parsing JSON' });
      return;
    }
    const { q, id, mutation } = graphqlMutation(parsed);
    if (typeof id !== 'string') {
      this.violations.push({
        kind: 'route',
        method: 'POST',
        path: '/graphql',
        operationId: undefined,
        errors: [
          `the lab forge only implements markPullRequestReadyForReview and convertPullRequestToDraft with an ID! variable; got: ${q.slice(0, 200)}`,
        ],
      });
      reply(200, { errors: [{ type: 'UNIMPLEMENTED', message: 'not implemented by the lab forge' }] });
      return;
    }
    record.operationId = `graphql/${mutation}`;
    const p = this.pullByNodeId(id);
    if (p) {
      if (p.state === 'open') {
        p.draft = mutation === 'convertPullRequestToDraft';
        p.updatedAt = now();
      }
      reply(200, { data: { [mutation]: { pullRequest: { isDraft: p.draft } } } });
      return;
    }
    reply(200, {
      data: { [mutation]: null },
      errors: [
        { type: 'NOT_FOUND', path: [mutation], message: `Could not resolve to a node with the global id of '${id}'` },
      ],
    });
  }

  // ---- helpers

  /** The pull request with this GraphQL node id, in any repository. */
  private pullByNodeId(id: string): PullState | undefined {
    for (const r of this.repos.values()) {
      for (const p of r.pulls.values()) if (this.shapes.nodeId('PullRequest', p.id) === id) return p;
    }
    return undefined;
  }

  private page(c: Ctx, items: unknown[]): Reply {
    const perPage = Math.min(Number(c.query.per_page ?? 30), 100);
    const page = Math.max(Number(c.query.page ?? 1), 1);
    const last = Math.max(Math.ceil(items.length / perPage), 1);
    const headers: Record<string, string> = {};
    if (last > 1) {
      const base = `${this.shapes.user('x').url as string}`.replace(/\/users\/x$/, '');
      const link = (n: number, rel: string): string =>
        `<${base}/repos/${c.repo.owner}/${c.repo.name}?per_page=${perPage}&page=${n}>; rel="${rel}"`;
      const parts: string[] = [];
      if (page < last) parts.push(link(page + 1, 'next'), link(last, 'last'));
      if (page > 1) parts.push(link(1, 'first'), link(page - 1, 'prev'));
      headers.link = parts.join(', ');
    }
    return { status: 200, body: items.slice((page - 1) * perPage, page * perPage), headers };
  }

  private withPull(c: Ctx, f: (p: PullState) => Promise<Reply> | Reply): Promise<Reply> | Reply {
    const n = Number(c.params.pull_number ?? c.params.issue_number);
    const p = c.repo.pulls.get(n);
    return p ? f(p) : notFound();
  }

  /** An edit's `state`: closing records the head it was closed at; reopening clears the close time; anything else changes nothing. */
  async moveState(r: RepoState, p: PullState, state: unknown): Promise<void> {
    if (state === 'closed' && p.state === 'open') {
      await this.refreshHead(r, p);
      p.state = 'closed';
      p.closedAt = now();
    } else if (state === 'open' && p.state === 'closed') {
      p.state = 'open';
      p.closedAt = null;
    }
  }

  /** Follows the head branch of an open PR (shared with the Gitea surface). */
  async refreshHead(r: RepoState, p: PullState): Promise<void> {
    if (p.state !== 'open') return;
    const sha = await resolveRef(r.bareDir, `refs/heads/${p.headRef}`);
    if (sha && sha !== p.headSha) {
      p.headSha = sha;
      p.updatedAt = now();
    }
  }

  async baseSha(r: RepoState, p: PullState): Promise<string> {
    return (await resolveRef(r.bareDir, `refs/heads/${p.baseRef}`)) ?? '0'.repeat(40);
  }

  /** Mergeability and diff stats of a PR, from the bare repo (shared with the Gitea surface). */
  async details(r: RepoState, p: PullState): Promise<PullDetails> {
    const baseSha = await this.baseSha(r, p);
    let mergeable: boolean | null = null;
    let mergeableState = 'unknown';
    if (p.state === 'open') {
      const mt = await runGit([
        '--git-dir',
        r.bareDir,
        'merge-tree',
        '--write-tree',
        '--no-messages',
        baseSha,
        p.headSha,
      ]);
      mergeable = mt.code === 0;
      mergeableState = mergeable ? 'clean' : 'dirty';
    }
    const range = p.mergedAt ? `${p.mergeCommitSha ?? ''}^1...${p.headSha}` : `${baseSha}...${p.headSha}`;
    const count = await runGit(['--git-dir', r.bareDir, 'rev-list', '--count', '--right-only', range]);
    const stat = await runGit(['--git-dir', r.bareDir, 'diff', '--numstat', range]);
    let additions = 0;
    let deletions = 0;
    let changedFiles = 0;
    for (const line of stat.stdout.split('\n')) {
      const [a, d] = line.split('\t');
      if (a === undefined || d === undefined) continue;
      changedFiles++;
      additions += Number(a) || 0;
      deletions += Number(d) || 0;
    }
    return {
      baseSha,
      mergeable,
      mergeableState,
      commits: Number(count.stdout.trim()) || 0,
      additions,
      deletions,
      changedFiles,
    };
  }

  private async fullPull(r: RepoState, p: PullState): Promise<Record<string, unknown>> {
    await this.refreshHead(r, p);
    const comments = r.comments.filter((c) => c.issueNumber === p.number).length;
    return this.shapes.pull(r, p, await this.details(r, p), comments);
  }

  private labelsOf(r: RepoState, p: PullState): unknown[] {
    return p.labels.flatMap((n) => {
      const l = r.labels.get(n);
      return l ? [this.shapes.label(r, l)] : [];
    });
  }

  private branchOf(r: RepoState, head: string): string {
    const colon = head.indexOf(':');
    if (colon < 0) return head;
    return head.slice(0, colon).toLowerCase() === r.owner.toLowerCase() ? head.slice(colon + 1) : head;
  }

  // ---- repositories

  private async getRepo(c: Ctx): Promise<Reply> {
    const log = await runGit(['--git-dir', c.repo.bareDir, 'log', '-1', '--format=%cI', '--all']);
    const pushed = log.stdout.trim() ? new Date(log.stdout.trim()).toISOString().replace(/\.\d{3}Z$/, 'Z') : null;
    return { status: 200, body: this.shapes.fullRepository(c.repo, pushed) };
  }

  // ---- pull requests

  private async createPull(c: Ctx): Promise<Reply> {
    const r = c.repo;
    const title = c.body.title as string | undefined;
    const headRaw = c.body.head as string | undefined;
    const baseRef = c.body.base as string | undefined;
    if (!headRaw || !baseRef)
      return invalid('Validation Failed', [
        { resource: 'PullRequest', field: headRaw ? 'base' : 'head', code: 'missing_field' },
      ]);
    if (!title)
      return invalid('Validation Failed', [{ resource: 'PullRequest', field: 'title', code: 'missing_field' }]);
    const headRef = this.branchOf(r, headRaw);
    const headSha = await resolveRef(r.bareDir, `refs/heads/${headRef}`);
    if (!headSha) return invalid('Validation Failed', [{ resource: 'PullRequest', field: 'head', code: 'invalid' }]);
    const baseSha = await resolveRef(r.bareDir, `refs/heads/${baseRef}`);
    if (!baseSha) return invalid('Validation Failed', [{ resource: 'PullRequest', field: 'base', code: 'invalid' }]);
    const dup = [...r.pulls.values()].find((p) => p.state === 'open' && p.headRef === headRef && p.baseRef === baseRef);
    if (dup)
      return invalid('Validation Failed', [
        {
          resource: 'PullRequest',
          code: 'custom',
          message: `A pull request already exists for ${r.owner}:${headRef}.`,
        },
      ]);
    const ahead = await git(['--git-dir', r.bareDir, 'rev-list', '--count', `${baseSha}..${headSha}`]);
    if (ahead === '0')
      return invalid('Validation Failed', [
        { resource: 'PullRequest', code: 'custom', message: `No commits between ${baseRef} and ${headRef}` },
      ]);
    const at = now();
    const p: PullState = {
      id: ++this.seq,
      number: r.nextNumber++,
      title,
      body: (c.body.body as string | undefined) ?? null,
      state: 'open',
      draft: c.body.draft === true,
      maintainerCanModify: c.body.maintainer_can_modify !== false,
      headRef,
      headSha,
      baseRef,
      labels: [],
      user: this.login,
      createdAt: at,
      updatedAt: at,
      closedAt: null,
      mergedAt: null,
      mergeCommitSha: null,
      mergedBy: null,
    };
    r.pulls.set(p.number, p);
    const body = await this.fullPull(r, p);
    return { status: 201, body, headers: { location: body.url as string } };
  }

  private async listPulls(c: Ctx): Promise<Reply> {
    const r = c.repo;
    const state = (c.query.state as string | undefined) ?? 'open';
    const head = c.query.head as string | undefined;
    const base = c.query.base as string | undefined;
    const sort = (c.query.sort as string | undefined) ?? 'created';
    const direction = (c.query.direction as string | undefined) ?? (sort === 'created' ? 'desc' : 'desc');
    let pulls = [...r.pulls.values()].filter((p) => state === 'all' || p.state === state);
    if (head !== undefined) pulls = pulls.filter(headFilter(r.owner, head));
    if (base !== undefined) pulls = pulls.filter((p) => p.baseRef === base);
    for (const p of pulls) await this.refreshHead(r, p);
    const key = sort === 'updated' ? (p: PullState) => p.updatedAt : (p: PullState) => p.createdAt;
    pulls.sort((a, b) => (key(a) === key(b) ? a.number - b.number : key(a) < key(b) ? -1 : 1));
    if (direction === 'desc') pulls.reverse();
    const items: unknown[] = [];
    for (const p of pulls) items.push(this.shapes.pullSimple(r, p, await this.baseSha(r, p)));
    return this.page(c, items);
  }

  private getPull(c: Ctx): Promise<Reply> | Reply {
    return this.withPull(c, async (p) => ({ status: 200, body: await this.fullPull(c.repo, p) }));
  }

  private updatePull(c: Ctx): Promise<Reply> | Reply {
    return this.withPull(c, async (p) => {
      const r = c.repo;
      const b = c.body;
      if (typeof b.base === 'string' && !(await resolveRef(r.bareDir, `refs/heads/${b.base}`))) {
        return invalid('Validation Failed', [{ resource: 'PullRequest', field: 'base', code: 'invalid' }]);
      }
      if (b.state === 'open' && p.state === 'closed') {
        if (p.mergedAt)
          return invalid('Validation Failed', [
            {
              resource: 'PullRequest',
              code: 'custom',
              message: 'state cannot be changed. The pull request cannot be reopened because it is merged.',
            },
          ]);
        if (!(await resolveRef(r.bareDir, `refs/heads/${p.headRef}`))) {
          return invalid('Validation Failed', [
            {
              resource: 'PullRequest',
              code: 'custom',
              message: `state cannot be changed. The ${p.headRef} branch has been deleted.`,
            },
          ]);
        }
      }
      if (typeof b.title === 'string') p.title = b.title;
      if (typeof b.body === 'string') p.body = b.body;
      if (typeof b.base === 'string') p.baseRef = b.base;
      if (typeof b.maintainer_can_modify === 'boolean') p.maintainerCanModify = b.maintainer_can_modify;
      await this.moveState(r, p, b.state);
      p.updatedAt = now();
      return { status: 200, body: await this.fullPull(r, p) };
    });
  }

  private mergePull(c: Ctx): Promise<Reply> | Reply {
    return this.withPull(c, async (p) => {
      const r = c.repo;
      const notAllowed = (message: string): Reply => ({ status: 405, body: { message, documentation_url: DOCS } });
      if (p.mergedAt) return notAllowed('Pull Request is not mergeable');
      if (p.state !== 'open') return notAllowed('Pull Request is not mergeable');
      await this.refreshHead(r, p);
      if (typeof c.body.sha === 'string' && c.body.sha !== p.headSha) {
        return {
          status: 409,
          body: { message: 'Head branch was modified. Review and try the merge again.', documentation_url: DOCS },
        };
      }
      const method = (c.body.merge_method as string | undefined) ?? 'merge';
      if (method === 'rebase') return notAllowed('Rebase merges are not allowed on this repository.');
      const squash = method === 'squash';
      const outcome = await mergeInBare(r.bareDir, {
        base: p.baseRef,
        headSha: p.headSha,
        message: mergeMessage(r, p, c.body, squash),
        squash,
      });
      if (!outcome.ok) {
        return outcome.reason === 'conflict'
          ? notAllowed('Merge conflict')
          : {
              status: 409,
              body: { message: 'Base branch was modified. Review and try the merge again.', documentation_url: DOCS },
            };
      }
      const at = now();
      Object.assign(p, {
        state: 'closed',
        mergedAt: at,
        closedAt: at,
        updatedAt: at,
        mergeCommitSha: outcome.sha,
        mergedBy: this.login,
      });
      return { status: 200, body: { sha: outcome.sha, merged: true, message: 'Pull Request successfully merged' } };
    });
  }

  // ---- labels and comments (the Issues API, on pull requests)

  private addLabels(c: Ctx, replace = false): Promise<Reply> | Reply {
    return this.withPull(c, (p) => {
      const raw: unknown = Array.isArray(c.body) ? c.body : (c.body.labels ?? []);
      const names = (raw as unknown[]).map((x) => (typeof x === 'string' ? x : String((x as { name: unknown }).name)));
      if (replace) p.labels = [];
      for (const name of names) {
        if (!c.repo.labels.has(name))
          c.repo.labels.set(name, { id: ++this.seq, name, color: 'ededed', description: null });
        if (!p.labels.includes(name)) p.labels.push(name);
      }
      p.updatedAt = now();
      return { status: 200, body: this.labelsOf(c.repo, p) };
    });
  }

  private removeLabel(c: Ctx): Promise<Reply> | Reply {
    return this.withPull(c, (p) => {
      const name = c.params.name ?? '';
      if (!p.labels.includes(name))
        return { status: 404, body: { message: 'Label does not exist', documentation_url: DOCS, status: '404' } };
      p.labels = p.labels.filter((l) => l !== name);
      p.updatedAt = now();
      return { status: 200, body: this.labelsOf(c.repo, p) };
    });
  }

  private createComment(c: Ctx): Promise<Reply> | Reply {
    return this.withPull(c, (p) => {
      const at = now();
      const comment = {
        id: ++this.seq,
        issueNumber: p.number,
        body: String(c.body.body),
        user: this.login,
        createdAt: at,
        updatedAt: at,
      };
      c.repo.comments.push(comment);
      p.updatedAt = at;
      const body = this.shapes.comment(c.repo, comment);
      return { status: 201, body, headers: { location: body.url as string } };
    });
  }

  private listComments(c: Ctx): Promise<Reply> | Reply {
    return this.withPull(c, (p) => {
      const since = c.query.since as string | undefined;
      const items = c.repo.comments
        .filter((x) => x.issueNumber === p.number && (since === undefined || x.updatedAt >= since))
        .map((x) => this.shapes.comment(c.repo, x));
      return this.page(c, items);
    });
  }

  // ---- commit statuses

  private async createStatus(c: Ctx): Promise<Reply> {
    const sha = c.params.sha ?? '';
    const full = /^[0-9a-f]{40}$/i.test(sha) ? await resolveRef(c.repo.bareDir, sha) : undefined;
    if (!full)
      return invalid('Validation Failed', [
        { resource: 'Status', field: 'sha', code: 'custom', message: `No commit found for SHA: ${sha}` },
      ]);
    const s = {
      id: ++this.seq,
      sha: full,
      state: c.body.state as 'error' | 'failure' | 'pending' | 'success',
      targetUrl: (c.body.target_url as string | null | undefined) ?? null,
      description: (c.body.description as string | null | undefined) ?? null,
      context: (c.body.context as string | undefined) ?? 'default',
      user: this.login,
      createdAt: now(),
    };
    c.repo.statuses.push(s);
    const body = this.shapes.status(c.repo, s);
    return { status: 201, body, headers: { location: body.url as string } };
  }

  private async listStatuses(c: Ctx): Promise<Reply> {
    const ref = c.params.ref ?? '';
    const sha = (await resolveRef(c.repo.bareDir, ref)) ?? (await resolveRef(c.repo.bareDir, `refs/heads/${ref}`));
    if (!sha) return notFound();
    const items = c.repo.statuses
      .filter((s) => s.sha === sha)
      .reverse()
      .map((s) => this.shapes.status(c.repo, s));
    return this.page(c, items);
  }

  // ---- releases

  private visibleReleases(r: RepoState): ReleaseState[] {
    return [...r.releases].sort((a, b) => ((b.publishedAt ?? b.createdAt) < (a.publishedAt ?? a.createdAt) ? -1 : 1));
  }

  private latestRelease(c: Ctx): Reply {
    const rel = this.visibleReleases(c.repo).find((r) => !r.draft && !r.prerelease);
    return rel ? { status: 200, body: this.shapes.release(c.repo, rel) } : notFound();
  }

  private async createRelease(c: Ctx): Promise<Reply> {
    const r = c.repo;
    const tag = c.body.tag_name as string | undefined;
    if (!tag) return invalid('Validation Failed', [{ resource: 'Release', field: 'tag_name', code: 'missing_field' }]);
    if (r.releases.some((x) => x.tagName === tag))
      return invalid('Validation Failed', [{ resource: 'Release', field: 'tag_name', code: 'already_exists' }]);
    const target = (c.body.target_commitish as string | undefined) ?? r.defaultBranch;
    if (!(await resolveRef(r.bareDir, `refs/tags/${tag}`))) {
      const sha = (await resolveRef(r.bareDir, `refs/heads/${target}`)) ?? (await resolveRef(r.bareDir, target));
      if (sha) await git(['--git-dir', r.bareDir, 'update-ref', `refs/tags/${tag}`, sha, '']);
    }
    const at = now();
    const draft = c.body.draft === true;
    const rel: ReleaseState = {
      id: ++this.seq,
      tagName: tag,
      targetCommitish: target,
      name: (c.body.name as string | undefined) ?? tag,
      body: (c.body.body as string | undefined) ?? null,
      draft,
      prerelease: c.body.prerelease === true,
      user: this.login,
      createdAt: at,
      publishedAt: draft ? null : at,
    };
    r.releases.push(rel);
    const body = this.shapes.release(r, rel);
    return { status: 201, body, headers: { location: body.url as string } };
  }
}
