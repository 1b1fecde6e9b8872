// The three outcome kinds of a failed operation, by what the work queue does about them.
// Adapters map their errors to these; nobody branches on message text.

export const OutcomeKind = {
  /** Needs a human (bad credentials, invalid object, forbidden): record a condition, stop retrying. */
  Stalled: 'Stalled',
  /** A known reason and a known time (a PDB allows no disruption now, a 429 with Retry-After): re-add then. */
  Waiting: 'Waiting',
  /** Anything that may heal by itself (network, 5xx, conflict): retry with backoff. */
  Transient: 'Transient',
} as const;
export type OutcomeKind = (typeof OutcomeKind)[keyof typeof OutcomeKind];

export interface OutcomeErrorInit {
  kind: OutcomeKind;
  /** Machine-readable cause, CamelCase (e.g. `PDBViolation`, `Forbidden`, `Conflict`). */
  reason: string;
  message: string;
  /** Waiting only: how long until it is worth looking again. */
  retryAfterMs?: number;
  /** HTTP status or gRPC code, when there was one. */
  code?: number;
  cause?: unknown;
}

export class OutcomeError extends Error {
  readonly kind: OutcomeKind;
  readonly reason: string;
  readonly retryAfterMs: number | undefined;
  readonly code: number | undefined;

  constructor(init: OutcomeErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'OutcomeError';
    this.kind = init.kind;
    this.reason = init.reason;
    this.retryAfterMs = init.retryAfterMs;
    this.code = init.code;
  }
}

export function isOutcomeError(err: unknown): err is OutcomeError {
  return err instanceof OutcomeError;
}
