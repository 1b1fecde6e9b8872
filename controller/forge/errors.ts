// Forge API failures → outcome kinds. Decided on HTTP status and rate-limit headers only, never on
// message text. Messages name the operation and, for credential problems, the token's source.
import { OutcomeError, OutcomeKind } from '../runtime/outcome.js';
import { endpointOf, forgeAnswerErrorIn } from './answer.js';

interface HttpishError {
  status?: number;
  response?: { headers?: Record<string, string | number | undefined> };
  name?: string;
  errors?: { type?: string }[];
  /** Octokit's RequestError and the Gitea adapter's HttpError carry the request. */
  request?: { method?: string; url?: string };
}

/** ` (GET https://host/path)` when the error says which request it was. */
function at(e: HttpishError): string {
  const url = e.request?.url;
  if (url === undefined) return '';
  try {
    return ` (${endpointOf(e.request?.method, url)})`;
  } catch {
    return '';
  }
}

export interface ForgeErrorContext {
  /** The token file (or other source) to name in 401/403 messages. */
  tokenSource: string;
  /** Epoch ms now, to turn x-ratelimit-reset into a wait. */
  now: number;
  /** The caller's signal aborted: not the forge's fault. */
  aborted: boolean;
  /** The call's own deadline ran out before the forge answered. */
  deadlineExceeded?: boolean;
}

const header = (e: HttpishError, name: string): string | undefined => {
  const v = e.response?.headers?.[name];
  return v === undefined ? undefined : String(v);
};

/** ` until <ISO time>` when the answer says when the spent limit resets (x-ratelimit-reset), else ''. */
function resetAt(e: HttpishError): string {
  const reset = Number(header(e, 'x-ratelimit-reset'));
  return header(e, 'x-ratelimit-remaining') === '0' && Number.isFinite(reset) && reset > 0
    ? ` until ${new Date(reset * 1000).toISOString()}`
    : '';
}

/** Milliseconds until a rate limit lifts, from Retry-After or x-ratelimit-reset; undefined when not rate limited. */
function rateLimitWaitMs(e: HttpishError, now: number): number | undefined {
  const retryAfter = Number(header(e, 'retry-after'));
  if (Number.isFinite(retryAfter) && retryAfter > 0) return retryAfter * 1000;
  if (header(e, 'x-ratelimit-remaining') === '0') {
    const reset = Number(header(e, 'x-ratelimit-reset'));
    // One second past the reset, as GitHub advises.
    if (Number.isFinite(reset)) return Math.max(1000, reset * 1000 - now + 1000);
  }
  if (e.status === 429) return 60_000;
  return undefined;
}

export function forgeError(err: unknown, what: string, c: ForgeErrorContext): OutcomeError {
  const e = (err ?? {}) as HttpishError;
  const status = typeof e.status === 'number' ? e.status : undefined;
  const base = { cause: err, ...(status === undefined ? {} : { code: status }) };
  // The first that applies, in this order: our own cancel or deadline, an unreadable answer, a
  // GraphQL error, a rate limit, a refusal that needs a human; else the forge failed or is unreachable.
  return (
    interrupted(e, what, c, base) ??
    unreadableAnswer(err, what) ??
    graphqlFailure(e, what, base) ??
    rateLimited(e, what, c.now, base) ??
    refusal(status, what, c.tokenSource, base) ??
    failed(e, status, what, base)
  );
}

/** What every outcome of one failure carries: the error itself and its HTTP status when there is one. */
interface OutcomeBase {
  cause: unknown;
  code?: number;
}

/** The call was cancelled or ran out of time on our side: not the forge's fault. */
function interrupted(e: HttpishError, what: string, c: ForgeErrorContext, base: OutcomeBase): OutcomeError | undefined {
  if (c.aborted)
    return new OutcomeError({ ...base, kind: OutcomeKind.Transient, reason: 'Aborted', message: `${what}: cancelled` });
  if (c.deadlineExceeded)
    return new OutcomeError({
      ...base,
      kind: OutcomeKind.Transient,
      reason: 'Timeout',
      message: `${what}: the forge did not answer before the deadline${at(e)}`,
    });
  return undefined;
}

/** An answer we would not read (answer.ts): the forge or something in front of it misbehaves; ask again later. */
function unreadableAnswer(err: unknown, what: string): OutcomeError | undefined {
  const answer = forgeAnswerErrorIn(err);
  if (answer)
    return new OutcomeError({
      cause: err,
      kind: OutcomeKind.Transient,
      reason: answer.reason,
      message: `${what}: ${answer.message}`,
    });
  return undefined;
}

function graphqlFailure(e: HttpishError, what: string, base: OutcomeBase): OutcomeError | undefined {
  if (e.name === 'GraphqlResponseError') {
    const types = (e.errors ?? []).map((x) => x.type ?? 'ERROR').join(', ');
    return new OutcomeError({
      ...base,
      kind: OutcomeKind.Stalled,
      reason: 'GraphQLError',
      message: `${what}: the forge's GraphQL API answered ${types}`,
    });
  }
  return undefined;
}

/** A 403 or 429 that says how long to wait (rateLimitWaitMs); other 403s are refusals. */
function rateLimited(e: HttpishError, what: string, now: number, base: OutcomeBase): OutcomeError | undefined {
  if (e.status === 403 || e.status === 429) {
    const wait = rateLimitWaitMs(e, now);
    if (wait !== undefined) {
      return new OutcomeError({
        ...base,
        kind: OutcomeKind.Waiting,
        reason: 'RateLimited',
        retryAfterMs: wait,
        message: `${what}: rate limited by the forge${resetAt(e)}; retrying in ${Math.ceil(wait / 1000)} s`,
      });
    }
  }
  return undefined;
}

/** Anything else: a server error or no answer at all; ask again later. */
function failed(e: HttpishError, status: number | undefined, what: string, base: OutcomeBase): OutcomeError {
  return new OutcomeError({
    ...base,
    kind: OutcomeKind.Transient,
    reason: status === undefined ? 'Unreachable' : 'ForgeError',
    message: `${what}: ${status === undefined ? 'the forge is unreachable' : `the forge answered HTTP ${status}`}${at(e)}`,
  });
}

/** 4xx answers that need a human: bad token, missing permission, wrong repository, a refused request. */
function refusal(
  status: number | undefined,
  what: string,
  tokenSource: string,
  base: OutcomeBase,
): OutcomeError | undefined {
  const c = { tokenSource };
  if (status === 401) {
    return new OutcomeError({
      ...base,
      kind: OutcomeKind.Stalled,
      reason: 'Unauthorized',
      message: `${what}: the forge rejected the token from ${c.tokenSource} (HTTP 401); put a valid token in that file`,
    });
  }
  if (status === 403) {
    return new OutcomeError({
      ...base,
      kind: OutcomeKind.Stalled,
      reason: 'Forbidden',
      message: `${what}: the token from ${c.tokenSource} lacks permission (HTTP 403); it needs write access to the repository's contents, pull requests and commit statuses (GitHub: contents, pull_requests and statuses write; Gitea: write:repository and write:issue)`,
    });
  }
  if (status === 404) {
    return new OutcomeError({
      ...base,
      kind: OutcomeKind.Stalled,
      reason: 'NotFound',
      message: `${what}: not found (HTTP 404); check the forge API URL and repository, and that the token from ${c.tokenSource} can see it`,
    });
  }
  if (status === 422 || status === 400) {
    return new OutcomeError({
      ...base,
      kind: OutcomeKind.Stalled,
      reason: 'Invalid',
      message: `${what}: the forge refused the request (HTTP ${status})`,
    });
  }
  return undefined;
}
