// The Gitea REST subset of the lab forge, under /api/v1, sharing repositories, pull requests,
// labels, comments and commit statuses with the GitHub surface (ForgeApi). Every request is
// resolved to an operation of Gitea's published OpenAPI description and validated before a
// handler sees it; every response is validated before it is sent. Failures are recorded in the
// same `violations` list, naming the Gitea description.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dispatch, type Reply, type Surface } from './dispatch.js';
import { ForgeContract, type Operation } from './openapi.js';
import { queryOf, readBody, type ForgeApi, type RecordedRequest, type Violation } from './api.js';
import { changedFiles, mergeInBare, resolveRef, runGit } from './git.js';
import { GiteaShapes } from './gitea-shapes.js';
import { isDraft, now, type PullState, type RepoState, type StatusState } from './shapes.js';

interface Ctx {
  repo: RepoState;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
  url: URL;
}

type Handler = (ctx: Ctx) => Promise<Reply> | Reply;

/** Gitea's DefaultPagingNum and its default MAX_RESPONSE_ITEMS. */
const DEFAULT_PAGE_SIZE = 30;
const MAX_PAGE_SIZE = 50;

/** The first required field a create-pull request lacks, as Gitea's binding error names it. */
const missingPullField = (head: string | undefined, base: string | undefined): string =>
  !head ? 'Head' : !base ? 'Base' : 'Title';

/** The branch of a create-pull `head`, which may be `owner:branch`. */
const headRefOf = (head: string): string => (head.includes(':') ? head.slice(head.indexOf(':') + 1) : head);

/** A merge request naming a head commit (non-empty) that is not the pull request's head any more. */
const headMoved = (given: unknown, headSha: string): boolean =>
  typeof given === 'string' && given !== '' && given !== headSha;

/** The merge commit's message: the request's title (or Gitea's default for the style), then its message if any. */
function mergeMessage(p: PullState, body: Record<string, unknown>, squash: boolean): string {
  const title =
    (body.merge_title_field as string | undefined) ||
    (squash
      ? `${p.title} (#${p.number})`
      : `Merge pull request '${p.title}' (#${p.number}) from ${p.headRef} into ${p.baseRef}`);
  const extra = (body.merge_message_field as string | undefined) ?? '';
  return extra ? `${title}\n\n${extra}` : title;
}

export class GiteaApi {
  private readonly shapes: GiteaShapes;
  private readonly contract: Promise<ForgeContract>;
  private readonly handlers: Record<string, Handler>;

  constructor(
    private readonly store: ForgeApi,
    private readonly baseUrl: () => string,
  ) {
    this.shapes = new GiteaShapes(baseUrl, store.shapes);
    this.contract = ForgeContract.load('gitea');
    this.handlers = {
      repoListPullRequests: (c) => this.listPulls(c),
      repoCreatePullRequest: (c) => this.createPull(c),
      repoGetPullRequest: (c) => this.withPull(c, async (p) => ({ status: 200, body: await this.pull(c.repo, p) })),
      repoEditPullRequest: (c) => this.editPull(c),
      repoGetPullRequestFiles: (c) =>
        this.withPull(c, async (p) => {
          await this.store.refreshHead(c.repo, p);
          const files = await changedFiles(c.repo.bareDir, await this.store.baseSha(c.repo, p), p.headSha);
          return this.page(
            c,
            files.map((f) => this.shapes.changedFile(c.repo, p.headSha, f)),
          );
        }),
      repoMergePullRequest: (c) => this.mergePull(c),
      issueGetComments: (c) => this.listComments(c),
      issueCreateComment: (c) => this.createComment(c),
      issueListLabels: (c) =>
        this.page(
          c,
          [...c.repo.labels.values()]
            .sort((a, b) => a.name.localeCompare(b.name))
            .map((l) => this.shapes.label(c.repo, l)),
        ),
      issueCreateLabel: (c) => this.createLabel(c),
      repoCreateStatus: (c) => this.createStatus(c),
      repoListStatusesByRef: (c) => this.listStatuses(c),
    };
  }

  /** Resolves once Gitea's OpenAPI description is loaded (build.sh must have fetched it). */
  async ready(): Promise<void> {
    await this.contract;
  }

  /** Gitea's APIError body: `url` is its API_SWAGGER_URL. */
  error(status: number, message: string): Reply {
    return { status, body: { message, url: `${this.baseUrl()}/api/swagger` } };
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const contract = await this.contract;
    const method = (req.method ?? 'GET').toUpperCase();
    const fullPath = url.pathname.replace(/(.)\/$/, '$1');
    const path = fullPath.slice(contract.basePath.length) || '/';
    const query = queryOf(url);
    const raw = await readBody(req);
    const record: RecordedRequest = {
      method,
      path: fullPath,
      operationId: undefined,
      query: { ...query },
      body: undefined,
      status: 0,
    };
    this.store.requests.push(record);
    const violation = (kind: Violation['kind'], operationId: string | undefined, errors: string[]): void => {
      this.store.violations.push({
        kind,
        method,
        path: fullPath,
        operationId,
        errors: errors.map((e) => `gitea ${contract.basePath}: ${e}`),
      });
    };
    const send = (reply: Reply, op?: Operation): void => {
      let { status, body } = reply;
      if (op) {
        const errors = contract.validateResponse(op, status, body);
        if (errors.length > 0) {
          violation('response', op.operationId, errors);
          status = 500;
          body = {
            message: `lab forge answered off-contract: ${errors.join('; ')}`,
            url: `${this.baseUrl()}/api/swagger`,
          };
        }
      }
      record.status = status;
      if (body === undefined) {
        res.writeHead(status, reply.headers);
        res.end();
        return;
      }
      res.writeHead(status, { ...reply.headers, 'content-type': 'application/json;charset=utf-8' });
      res.end(JSON.stringify(body));
    };

    const surface: Surface = {
      contract,
      notAnOperation: `${method} ${fullPath} is not an operation of Gitea's API`,
      handle: (id) => {
        const h = this.handlers[id];
        return h && ((c) => h({ ...c, query, url }));
      },
      repo: (owner, name) => this.store.repo(owner, name),
      violation,
      refuse: {
        route: () => this.error(404, 'not found'),
        badJson: () => this.error(422, 'body is not JSON'),
        // Gitea's form binding answers invalid input with 422 on any operation.
        invalid: (errors) => this.error(422, errors.join('; ')),
        noRepo: () => this.error(404, "The target couldn't be found."),
      },
    };
    const matched = fullPath.startsWith(`${contract.basePath}/`) ? contract.match(method, path) : undefined;
    const { reply, op } = await dispatch(surface, { matched, query, raw }, record);
    send(reply, op);
  }

  // ---- helpers

  /** Gitea's pagination: `page` (1-based), `limit` (≤ MAX_RESPONSE_ITEMS), X-Total-Count and a Link header. */
  private page(c: Ctx, items: unknown[]): Reply {
    const { from, to, headers } = this.pageBounds(c, items.length);
    return { status: 200, body: items.slice(from, to), headers };
  }

  /** A page of `all`, shaped only for the items on it, as Gitea pages in its database: a pull's shape runs git several times. */
  private async pageShaped<T>(c: Ctx, all: T[], shape: (item: T) => Promise<unknown>): Promise<Reply> {
    const { from, to, headers } = this.pageBounds(c, all.length);
    const body: unknown[] = [];
    for (const item of all.slice(from, to)) body.push(await shape(item));
    return { status: 200, body, headers };
  }

  /** Where the asked page starts and ends in a list of `total`, and its X-Total-Count and Link headers. */
  private pageBounds(c: Ctx, total: number): { from: number; to: number; headers: Record<string, string> } {
    const asked = Number(c.query.limit ?? 0);
    const limit = asked <= 0 ? DEFAULT_PAGE_SIZE : Math.min(asked, MAX_PAGE_SIZE);
    const page = Math.max(Number(c.query.page ?? 1), 1);
    const pages = Math.max(Math.ceil(total / limit), 1);
    const headers: Record<string, string> = { 'x-total-count': String(total) };
    const link = (n: number, rel: string): string => {
      const u = new URL(c.url.href);
      u.searchParams.set('page', String(n));
      return `<${this.baseUrl()}${u.pathname}${u.search}>; rel="${rel}"`;
    };
    const links: string[] = [];
    if (page < pages) links.push(link(page + 1, 'next'), link(pages, 'last'));
    if (page > 1) links.push(link(1, 'first'), link(Math.min(page - 1, pages), 'prev'));
    if (links.length > 0) headers.link = links.join(',');
    return { from: (page - 1) * limit, to: page * limit, headers };
  }

  private withPull(c: Ctx, f: (p: PullState) => Promise<Reply> | Reply): Promise<Reply> | Reply {
    const p = c.repo.pulls.get(Number(c.params.index));
    return p ? f(p) : this.error(404, 'not found');
  }

  private async pull(r: RepoState, p: PullState): Promise<Record<string, unknown>> {
    await this.store.refreshHead(r, p);
    const d = await this.store.details(r, p);
    const mb = await runGit(['--git-dir', r.bareDir, 'merge-base', d.baseSha, p.headSha]);
    const comments = r.comments.filter((x) => x.issueNumber === p.number).length;
    return this.shapes.pull(r, p, { ...d, comments, mergeBase: mb.code === 0 ? mb.stdout.trim() : d.baseSha });
  }

  /** Label IDs → names in the shared store; undefined names the first unknown ID. */
  private labelNames(r: RepoState, ids: unknown): { names: string[] } | { unknown: number } {
    const names: string[] = [];
    for (const id of (ids ?? []) as number[]) {
      const l = [...r.labels.values()].find((x) => x.id === id);
      if (!l) return { unknown: id };
      names.push(l.name);
    }
    return { names };
  }

  // ---- pull requests

  private async listPulls(c: Ctx): Promise<Reply> {
    const r = c.repo;
    const state = (c.query.state as string | undefined) ?? 'open';
    const base = c.query.base_branch as string | undefined;
    const pulls = [...r.pulls.values()].filter(
      (p) => (state === 'all' || p.state === state) && (base === undefined || p.baseRef === base),
    );
    // Gitea's default order is newest first; `oldest` reverses it (other sorts: newest first too).
    pulls.sort((a, b) => b.number - a.number);
    if (c.query.sort === 'oldest') pulls.reverse();
    return this.pageShaped(c, pulls, (p) => this.pull(r, p));
  }

  private async createPull(c: Ctx): Promise<Reply> {
    const r = c.repo;
    const { head, base, title } = c.body as { head?: string; base?: string; title?: string };
    if (!head || !base || !title) return this.error(422, `[${missingPullField(head, base)}]: Required`);
    const headRef = headRefOf(head);
    const headSha = await resolveRef(r.bareDir, `refs/heads/${headRef}`);
    if (!headSha) return this.error(404, `head branch does not exist [name: ${headRef}]`);
    const baseSha = await resolveRef(r.bareDir, `refs/heads/${base}`);
    if (!baseSha) return this.error(404, `base branch does not exist [name: ${base}]`);
    const dup = [...r.pulls.values()].find((p) => p.state === 'open' && p.headRef === headRef && p.baseRef === base);
    if (dup) {
      return this.error(
        409,
        `pull request already exists for these targets [id: ${dup.id}, issue_id: ${dup.number}, head_repo_id: ${r.id}, base_repo_id: ${r.id}, head_branch: ${headRef}, base_branch: ${base}]`,
      );
    }
    const ahead = await runGit(['--git-dir', r.bareDir, 'rev-list', '--count', `${baseSha}..${headSha}`]);
    if (ahead.stdout.trim() === '0')
      return this.error(422, 'Invalid PullRequest: There are no changes between the head and the base');
    const labels = this.labelNames(r, c.body.labels);
    if ('unknown' in labels) return this.error(422, `label does not exist [id: ${labels.unknown}]`);
    const at = now();
    const p: PullState = {
      id: this.store.nextId(),
      number: r.nextNumber++,
      title,
      body: (c.body.body as string | undefined) ?? null,
      state: 'open',
      draft: false,
      maintainerCanModify: c.body.allow_maintainer_edit === true,
      headRef,
      headSha,
      baseRef: base,
      labels: labels.names,
      user: this.store.login,
      createdAt: at,
      updatedAt: at,
      closedAt: null,
      mergedAt: null,
      mergeCommitSha: null,
      mergedBy: null,
    };
    r.pulls.set(p.number, p);
    return { status: 201, body: await this.pull(r, p) };
  }

  /** Why Gitea would refuse this edit, if it would. */
  private async refuseEdit(r: RepoState, p: PullState, b: Record<string, unknown>): Promise<Reply | undefined> {
    if (b.state !== undefined && b.state !== 'open' && b.state !== 'closed')
      return this.error(422, `invalid state: ${JSON.stringify(b.state)}`);
    if (typeof b.base === 'string' && !(await resolveRef(r.bareDir, `refs/heads/${b.base}`)))
      return this.error(404, `new base '${b.base}' not exist`);
    if (b.state === 'open' && p.state === 'closed' && p.mergedAt)
      return this.error(409, 'cannot reopen a merged pull request');
    return undefined;
  }

  private editPull(c: Ctx): Promise<Reply> | Reply {
    return this.withPull(c, async (p) => {
      const r = c.repo;
      const b = c.body;
      const refused = await this.refuseEdit(r, p, b);
      if (refused) return refused;
      const labels = b.labels === undefined ? undefined : this.labelNames(r, b.labels);
      if (labels && 'unknown' in labels) return this.error(422, `label does not exist [id: ${labels.unknown}]`);
      if (typeof b.title === 'string') p.title = b.title;
      if (typeof b.body === 'string') p.body = b.body;
      if (typeof b.base === 'string') p.baseRef = b.base;
      if (typeof b.allow_maintainer_edit === 'boolean') p.maintainerCanModify = b.allow_maintainer_edit;
      if (labels) p.labels = labels.names;
      await this.store.moveState(r, p, b.state);
      p.updatedAt = now();
      // Gitea answers an edit with 201 (its description and routers/api/v1/repo/pull.go agree).
      return { status: 201, body: await this.pull(r, p) };
    });
  }

  private mergePull(c: Ctx): Promise<Reply> | Reply {
    return this.withPull(c, async (p) => {
      const r = c.repo;
      if (p.mergedAt) return this.error(405, 'The PR is already merged');
      if (p.state !== 'open') return this.error(405, 'The PR is closed');
      if (isDraft(p)) return this.error(405, 'Work in progress PRs cannot be merged');
      await this.store.refreshHead(r, p);
      if (headMoved(c.body.head_commit_id, p.headSha)) return this.error(409, 'head out of date');
      const style = c.body.do as string;
      if (style !== 'merge' && style !== 'squash')
        return this.error(405, `${style} is not allowed an allowed merge style for this repository`);
      const squash = style === 'squash';
      const outcome = await mergeInBare(r.bareDir, {
        base: p.baseRef,
        headSha: p.headSha,
        message: mergeMessage(p, c.body, squash),
        squash,
      });
      if (!outcome.ok)
        return this.error(
          409,
          outcome.reason === 'conflict' ? `merge conflict: ${outcome.detail}` : 'merge push out of date',
        );
      const at = now();
      Object.assign(p, {
        state: 'closed',
        mergedAt: at,
        closedAt: at,
        updatedAt: at,
        mergeCommitSha: outcome.sha,
        mergedBy: this.store.login,
      });
      return { status: 200 };
    });
  }

  // ---- comments and labels

  private listComments(c: Ctx): Promise<Reply> | Reply {
    return this.withPull(c, (p) => {
      const since = c.query.since as string | undefined;
      const before = c.query.before as string | undefined;
      const items = c.repo.comments
        .filter(
          (x) =>
            x.issueNumber === p.number &&
            (since === undefined || x.updatedAt >= since) &&
            (before === undefined || x.updatedAt < before),
        )
        .map((x) => this.shapes.comment(c.repo, x));
      return { status: 200, body: items };
    });
  }

  private createComment(c: Ctx): Promise<Reply> | Reply {
    return this.withPull(c, (p) => {
      const at = now();
      const comment = {
        id: this.store.nextId(),
        issueNumber: p.number,
        body: String(c.body.body),
        user: this.store.login,
        createdAt: at,
        updatedAt: at,
      };
      c.repo.comments.push(comment);
      p.updatedAt = at;
      return { status: 201, body: this.shapes.comment(c.repo, comment) };
    });
  }

  private createLabel(c: Ctx): Reply {
    const name = String(c.body.name);
    const color = String(c.body.color).replace(/^#/, '');
    if (!/^[0-9a-f]{6}$/i.test(color)) return this.error(422, `invalid color: ${String(c.body.color)}`);
    if (c.repo.labels.has(name)) return this.error(422, `label already exists [name: ${name}]`);
    const label = {
      id: this.store.nextId(),
      name,
      color,
      description: (c.body.description as string | undefined) ?? null,
    };
    c.repo.labels.set(name, label);
    return { status: 201, body: this.shapes.label(c.repo, label) };
  }

  // ---- commit statuses

  private async createStatus(c: Ctx): Promise<Reply> {
    const sha = c.params.sha ?? '';
    const full = /^[0-9a-f]{40}$/i.test(sha) ? await resolveRef(c.repo.bareDir, sha) : undefined;
    if (!full) return this.error(404, `commit does not exist [sha: ${sha}]`);
    if (typeof c.body.state !== 'string') return this.error(400, 'state is required');
    const s: StatusState = {
      id: this.store.nextId(),
      sha: full,
      state: c.body.state as StatusState['state'],
      targetUrl: (c.body.target_url as string | undefined) || null,
      description: (c.body.description as string | undefined) ?? null,
      context: (c.body.context as string | undefined) || 'default',
      user: this.store.login,
      createdAt: now(),
    };
    c.repo.statuses.push(s);
    return { status: 201, body: this.shapes.status(c.repo, s) };
  }

  private async listStatuses(c: Ctx): Promise<Reply> {
    const ref = c.params.ref ?? '';
    const sha =
      (await resolveRef(c.repo.bareDir, `refs/heads/${ref}`)) ??
      (await resolveRef(c.repo.bareDir, `refs/tags/${ref}`)) ??
      (/^[0-9a-f]{4,40}$/i.test(ref) ? await resolveRef(c.repo.bareDir, ref) : undefined);
    if (!sha) return this.error(404, `ref does not exist [ref: ${ref}]`);
    const state = c.query.state as string | undefined;
    const items = c.repo.statuses.filter((s) => s.sha === sha && (state === undefined || s.state === state)).reverse();
    if (c.query.sort === 'oldest' || c.query.sort === 'leastindex') items.reverse();
    return this.page(
      c,
      items.map((s) => this.shapes.status(c.repo, s)),
    );
  }
}
