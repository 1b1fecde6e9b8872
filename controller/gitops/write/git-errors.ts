// isomorphic-git failures → outcome kinds, by error code and HTTP status (never by message text).
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';

interface GitishError {
  code?: string;
  data?: { statusCode?: number; reason?: string };
}

export function gitError(err: unknown, what: string, tokenSource: string): OutcomeError {
  if (err instanceof OutcomeError) return err;
  const e = (err ?? {}) as GitishError;
  const status = e.code === 'HttpError' ? e.data?.statusCode : undefined;
  const base = { cause: err, ...(status === undefined ? {} : { code: status }) };
  // onAuthFailure cancels after the server refused our token.
  if (e.code === 'UserCanceledError' || status === 401) {
    return new OutcomeError({
      ...base,
      kind: OutcomeKind.Stalled,
      reason: 'Unauthorized',
      message: `${what}: the git server rejected the token from ${tokenSource}; put a valid write token in that file`,
    });
  }
  if (status === 403) {
    return new OutcomeError({
      ...base,
      kind: OutcomeKind.Stalled,
      reason: 'Forbidden',
      message: `${what}: the token from ${tokenSource} may not push to this repository (HTTP 403); it needs contents:write`,
    });
  }
  if (status === 404) {
    return new OutcomeError({
      ...base,
      kind: OutcomeKind.Stalled,
      reason: 'NotFound',
      message: `${what}: repository not found (HTTP 404); check the git URL and the token's access`,
    });
  }
  return new OutcomeError({
    ...base,
    kind: OutcomeKind.Transient,
    reason: status === undefined ? 'GitUnreachable' : 'GitError',
    message: `${what}: ${status === undefined ? `git transport failed (${e.code ?? 'network'})` : `the git server answered HTTP ${status}`}`,
  });
}
