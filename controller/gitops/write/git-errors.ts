// isomorphic-git failures → outcome kinds, by error code and HTTP status (never by message text).
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';

interface GitishError {
  code?: string;
  data?: { statusCode?: number; reason?: string };
}

interface StalledInput {
  code: string | undefined;
  status: number | undefined;
  what: string;
  tokenSource: string;
}

/** Failures only a human fixes (the token, its rights, the URL): their reason and message; undefined for the rest. */
function stalledCause({
  code,
  status,
  what,
  tokenSource,
}: StalledInput): { reason: string; message: string } | undefined {
  // onAuthFailure cancels after the server refused our token.
  if (code === 'UserCanceledError' || status === 401) {
    return {
      reason: 'Unauthorized',
      message: `${what}: the git server rejected the token from ${tokenSource}; put a valid write token in that file`,
    };
  }
  if (status === 403) {
    return {
      reason: 'Forbidden',
      message: `${what}: the token from ${tokenSource} may not push to this repository (HTTP 403); it needs contents:write`,
    };
  }
  if (status === 404) {
    return {
      reason: 'NotFound',
      message: `${what}: repository not found (HTTP 404); check the git URL and the token's access`,
    };
  }
  return undefined;
}

export function gitError(err: unknown, what: string, tokenSource: string): OutcomeError {
  if (err instanceof OutcomeError) return err;
  const e = (err ?? {}) as GitishError;
  const status = e.code === 'HttpError' ? e.data?.statusCode : undefined;
  const base = { cause: err, ...(status === undefined ? {} : { code: status }) };
  const stalled = stalledCause({ code: e.code, status, what, tokenSource });
  if (stalled) return new OutcomeError({ ...base, kind: OutcomeKind.Stalled, ...stalled });
  return new OutcomeError({
    ...base,
    kind: OutcomeKind.Transient,
    reason: status === undefined ? 'GitUnreachable' : 'GitError',
    message: `${what}: ${status === undefined ? `git transport failed (${e.code ?? 'network'})` : `the git server answered HTTP ${status}`}`,
  });
}
