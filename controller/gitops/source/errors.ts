// isomorphic-git and network failures → outcome kinds. Decisions use the error's code and HTTP
// status, never its message. The token file is named in auth failures; the token never is.
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';

export interface GitErrorContext {
  /** What was attempted: `list refs of https://…/plans.git`. */
  what: string;
  tokenFile: string | undefined;
  signal: AbortSignal;
  deadlineExceeded: boolean;
}

export function gitOutcome(err: unknown, c: GitErrorContext): OutcomeError {
  if (err instanceof OutcomeError) return err;
  if (c.signal.aborted)
    return new OutcomeError({
      kind: OutcomeKind.Transient,
      reason: 'Canceled',
      message: `${c.what}: canceled`,
      cause: err,
    });
  if (c.deadlineExceeded)
    return new OutcomeError({
      kind: OutcomeKind.Transient,
      reason: 'Timeout',
      message: `${c.what}: deadline exceeded`,
      cause: err,
    });
  const status = httpStatus(err);
  if (status !== undefined) return httpOutcome(status, err, c);
  const e = err as { code?: unknown } | null;
  const detail = err instanceof Error ? err.message : String(err);
  const reason = typeof e?.code === 'string' && /^E[A-Z]+$/.test(e.code) ? 'GitUnreachable' : 'GitOperationFailed';
  return new OutcomeError({ kind: OutcomeKind.Transient, reason, message: `${c.what}: ${detail}`, cause: err });
}

/** The status of isomorphic-git's HttpError; undefined for any other failure. */
function httpStatus(err: unknown): number | undefined {
  const e = err as { code?: unknown; data?: { statusCode?: unknown } } | null;
  return e?.code === 'HttpError' && typeof e.data?.statusCode === 'number' ? e.data.statusCode : undefined;
}

function httpOutcome(status: number, err: unknown, c: GitErrorContext): OutcomeError {
  if (status === 401 || status === 403) {
    const fix = c.tokenFile
      ? `check the token in ${c.tokenFile} (--git-token-file) and its read access to the repository`
      : 'the repository needs a token: pass --git-token-file';
    return new OutcomeError({
      kind: OutcomeKind.Stalled,
      reason: 'GitAuthFailed',
      code: status,
      message: `${c.what}: HTTP ${status}: ${fix}`,
      cause: err,
    });
  }
  if (status === 404) {
    return new OutcomeError({
      kind: OutcomeKind.Stalled,
      reason: 'RepositoryNotFound',
      code: status,
      message: `${c.what}: HTTP 404: check --git-url (or the token's access to it)`,
      cause: err,
    });
  }
  return new OutcomeError({
    kind: OutcomeKind.Transient,
    reason: 'GitServerError',
    code: status,
    message: `${c.what}: HTTP ${status}`,
    cause: err,
  });
}

/**
 * A commit refused as a whole for breaking a cap of the fetch (its pack or an object too large):
 * nothing of it is applied and nothing is pruned. Stalled: the same commit is refused again until a
 * new push; `commit` is undefined when the head was not known yet.
 */
export class CommitRefusedError extends OutcomeError {
  /** @param why the cap broken, short (the commit status description). */
  constructor(
    readonly commit: string | undefined,
    readonly why: string,
    message: string,
  ) {
    super({ kind: OutcomeKind.Stalled, reason: 'GitCommitRefused', message });
  }
}
