// The upstream Talos releases feed: GET /repos/{owner}/{repo}/releases from the GitHub REST API
// (or a GitHub-compatible base URL such as GHES or the lab forge), with plain fetch.
// - Anonymous by default; a token goes only into the Authorization header (never the URL, never a message).
// - ETag / If-None-Match: an unchanged feed is a 304 that keeps the last list and costs no rate limit.
// - Rate limits: `x-ratelimit-remaining: 0` (403 or 429) → Waiting until `x-ratelimit-reset`;
//   a secondary limit with Retry-After → Waiting that long.
// - Errors are OutcomeErrors (runtime/outcome.ts): 401/403/404 Stalled, 5xx and the network Transient.
// One page of 100 (newest first) is enough: the decision needs the current minor and the next.
import { z } from 'zod';
import type { Release } from '../core/auto-update/releases.js';
import { isLoopbackHostname } from '../registry/mirrors.js';
import { parseRetryAfter } from '../registry/client.js';
import { deadlineSignal, type OpContext } from '../runtime/context.js';
import { OutcomeError, OutcomeKind } from '../runtime/outcome.js';
import { readTokenFile } from '../runtime/token-file.js';
import { endpointOf, forgeAnswerErrorIn, readCapped } from './answer.js';

export const GITHUB_API = 'https://api.github.com';
const TALOS_REPOSITORY = 'siderolabs/talos';
const GITHUB_API_VERSION = '2022-11-28';
/** Statuses a person must fix (401 is its own case: its hint depends on whether a token was given). */
const STALLED_STATUS: Partial<Record<number, { reason: string; hint: string }>> = {
  403: { reason: 'Forbidden', hint: '' },
  404: { reason: 'NotFound', hint: ': check the base URL and the repository' },
};

export interface ReleasesClientOptions {
  /** REST API base URL (default https://api.github.com; GHES: https://host/api/v3). https, or http to loopback only. */
  baseUrl?: string | undefined;
  /** owner/name (default siderolabs/talos). */
  repository?: string | undefined;
  /** Optional token (higher rate limit); sent only as `Authorization: Bearer`. */
  token?: string | undefined;
  fetch?: typeof fetch;
  userAgent?: string;
}

interface ReleasesFeed {
  releases: Release[];
  /** true: the server answered 304 and `releases` is the previous list. */
  notModified: boolean;
  /** The primary rate limit after this request, when the server reported it. */
  rateLimit: { remaining: number; resetAt: number } | undefined;
}

export interface ReleasesClient {
  /** The releases, newest first as GitHub lists them. Rejects with an OutcomeError. */
  list(ctx: OpContext): Promise<ReleasesFeed>;
}

const releaseShape = z.object({
  tag_name: z.string(),
  draft: z.boolean(),
  prerelease: z.boolean(),
  published_at: z.string().nullable(),
  html_url: z.string(),
});

/**
 * Checks a REST API base URL (the releases feed, the forge): https, plain http only to a loopback
 * host (a token goes with every request), no credentials, no query. Returns it without trailing "/".
 */
export function checkApiBaseUrl(text: string, what: string): string | Error {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return new Error(`${what} "${text}" is not a URL (e.g. ${GITHUB_API})`);
  }
  if (u.username || u.password)
    return new Error(`${what}: credentials do not belong in the URL; give the token separately`);
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopbackHostname(u.hostname))) {
    return new Error(`${what} ${u.origin}: must be https:// (plain http only to a loopback address)`);
  }
  if (u.search || u.hash) return new Error(`${what} ${u.origin}${u.pathname}: no query or fragment`);
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

/** Checks the releases API base URL (checkApiBaseUrl). */
export function checkReleasesBaseUrl(text: string): string | Error {
  return checkApiBaseUrl(text, 'releases API base URL');
}

export function createReleasesClient(opts: ReleasesClientOptions = {}): ReleasesClient {
  const base = checkReleasesBaseUrl(opts.baseUrl ?? GITHUB_API);
  if (base instanceof Error) throw base;
  const repository = opts.repository ?? TALOS_REPOSITORY;
  if (!/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/.test(repository))
    throw new Error(`releases repository "${repository}" must be owner/name`);
  const doFetch = opts.fetch ?? fetch;
  const url = `${base}/repos/${repository}/releases?per_page=100`;
  const what = `GET ${base}/repos/${repository}/releases`;
  let cache: { etag: string; releases: Release[] } | undefined;

  const fail = (init: {
    kind: OutcomeKind;
    reason: string;
    why: string;
    code?: number;
    retryAfterMs?: number;
    cause?: unknown;
  }): OutcomeError => {
    const { why, ...rest } = init;
    return new OutcomeError({ ...rest, message: `${what}: ${why}` });
  };

  function rateLimitOf(res: Response): ReleasesFeed['rateLimit'] {
    const remaining = Number(res.headers.get('x-ratelimit-remaining') ?? NaN);
    const reset = Number(res.headers.get('x-ratelimit-reset') ?? NaN);
    return Number.isFinite(remaining) && Number.isFinite(reset) ? { remaining, resetAt: reset * 1000 } : undefined;
  }

  function statusError(ctx: OpContext, res: Response, message: string): OutcomeError {
    return rateLimited(res, ctx.clock.now()) ?? httpError(res.status, message);
  }

  /** A 403 or 429 that is a rate limit (the primary one spent, or a secondary one with Retry-After): wait, do not fail. */
  function rateLimited(res: Response, now: number): OutcomeError | undefined {
    const code = res.status;
    if (code !== 403 && code !== 429) return undefined;
    const limit = rateLimitOf(res);
    if (limit && limit.remaining <= 0) {
      const at = new Date(limit.resetAt).toISOString();
      return fail({
        kind: OutcomeKind.Waiting,
        reason: 'RateLimited',
        code,
        retryAfterMs: Math.max(1000, limit.resetAt - now),
        why: `rate limit exhausted until ${at}${opts.token === undefined ? ' (anonymous: a token raises the limit)' : ''}`,
      });
    }
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), now);
    if (retryAfterMs === undefined) return undefined;
    return fail({
      kind: OutcomeKind.Waiting,
      reason: 'RateLimited',
      code,
      retryAfterMs,
      why: `secondary rate limit: retry after ${Math.ceil(retryAfterMs / 1000)} s`,
    });
  }

  function httpError(code: number, message: string): OutcomeError {
    const said = message === '' ? '' : `: ${message.slice(0, 200)}`;
    if (code === 401)
      return fail({
        kind: OutcomeKind.Stalled,
        reason: 'Unauthorized',
        code,
        why: `HTTP 401${said}; ${opts.token === undefined ? 'the API needs a token' : 'the token is invalid or expired'}`,
      });
    const stalled = STALLED_STATUS[code];
    if (stalled)
      return fail({
        kind: OutcomeKind.Stalled,
        reason: stalled.reason,
        code,
        why: `HTTP ${code}${said}${stalled.hint}`,
      });
    if (code === 429 || code >= 500)
      return fail({ kind: OutcomeKind.Transient, reason: 'Unavailable', code, why: `HTTP ${code}${said}` });
    return fail({ kind: OutcomeKind.Stalled, reason: 'Rejected', code, why: `HTTP ${code}${said}` });
  }

  async function request(ctx: OpContext, signal: AbortSignal): Promise<ReleasesFeed> {
    const headers: Record<string, string> = {
      accept: 'application/vnd.github+json',
      'x-github-api-version': GITHUB_API_VERSION,
      'user-agent': opts.userAgent ?? 'kangal-patch',
    };
    if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
    if (cache) headers['if-none-match'] = cache.etag;
    const res = await doFetch(url, { headers, signal, redirect: 'error' });
    // At most MAX_FORGE_BODY bytes (100 releases with their notes fit easily).
    const text = (await readCapped(res, endpointOf('GET', url))).toString('utf8');
    if (res.status === 304 && cache)
      return { releases: cache.releases, notModified: true, rateLimit: rateLimitOf(res) };
    if (res.status !== 200) throw statusError(ctx, res, messageOf(text));
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (cause) {
      throw fail({
        kind: OutcomeKind.Transient,
        reason: 'InvalidResponse',
        code: 200,
        why: 'the body is not JSON',
        cause,
      });
    }
    const parsed = z.array(releaseShape).safeParse(json);
    if (!parsed.success)
      throw fail({
        kind: OutcomeKind.Transient,
        reason: 'InvalidResponse',
        code: 200,
        why: `not a list of releases: ${parsed.error.issues[0]?.message ?? ''}`,
      });
    const releases = parsed.data.map((r): Release => {
      const at = r.published_at === null ? NaN : Date.parse(r.published_at);
      return {
        tagName: r.tag_name,
        draft: r.draft,
        prerelease: r.prerelease,
        publishedAt: Number.isFinite(at) ? at : undefined,
        htmlUrl: r.html_url,
      };
    });
    const etag = res.headers.get('etag');
    cache = etag ? { etag, releases } : undefined;
    return { releases, notModified: false, rateLimit: rateLimitOf(res) };
  }

  async function list(ctx: OpContext): Promise<ReleasesFeed> {
    const deadline = deadlineSignal(ctx);
    try {
      // No request once cancelled or past the deadline; the catch tells which it was.
      deadline.signal.throwIfAborted();
      return await request(ctx, deadline.signal);
    } catch (err) {
      if (err instanceof OutcomeError) throw err;
      const answer = forgeAnswerErrorIn(err);
      if (answer) throw fail({ kind: OutcomeKind.Transient, reason: answer.reason, why: answer.why, cause: err });
      if (ctx.signal.aborted)
        throw fail({ kind: OutcomeKind.Transient, reason: 'Canceled', why: 'canceled', cause: err });
      if (deadline.timedOut())
        throw fail({ kind: OutcomeKind.Transient, reason: 'Timeout', why: 'deadline exceeded', cause: err });
      throw fail({
        kind: OutcomeKind.Transient,
        reason: 'NetworkError',
        why: `no answer (${networkWhy(err)})`,
        cause: err,
      });
    } finally {
      deadline.dispose();
    }
  }

  return { list };
}

function messageOf(text: string): string {
  try {
    const m = (JSON.parse(text) as { message?: unknown }).message;
    return typeof m === 'string' ? m : '';
  } catch {
    return '';
  }
}

function networkWhy(err: unknown): string {
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
  const code = (cause as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : cause instanceof Error ? cause.message : String(cause);
}

/**
 * The releases client of the flags (--releases-api-url, --releases-token-file): the token file is
 * read at every use (rotation needs no restart); the client, with its ETag cache, is kept until the
 * token changes. Auto-update templates and stepwise paths share it.
 */
export function releasesClientWithTokenFile(opts: {
  baseUrl: string;
  tokenFile: string | undefined;
}): () => Promise<ReleasesClient> {
  let current: { token: string | undefined; client: ReleasesClient } | undefined;
  return async () => {
    const token = await readTokenFile(opts.tokenFile, '--releases-token-file', 'ReleasesTokenUnreadable');
    if (!current || current.token !== token)
      current = { token, client: createReleasesClient({ baseUrl: opts.baseUrl, token }) };
    return current.client;
  };
}
