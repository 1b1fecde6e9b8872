// Operation context: every I/O call takes one, so leader loss and SIGTERM cancel streams and
// sleeps at once, and every call has a deadline.
import type { Clock } from './clock.js';

export interface OpContext {
  readonly signal: AbortSignal;
  /** Epoch milliseconds after which the operation must give up. */
  readonly deadline: number;
  readonly clock: Clock;
}

/** A child context: aborted with its parent, and with a deadline at most `timeoutMs` from now. */
export function withTimeout(ctx: OpContext, timeoutMs: number): OpContext {
  return { signal: ctx.signal, clock: ctx.clock, deadline: Math.min(ctx.deadline, ctx.clock.now() + timeoutMs) };
}

/** Milliseconds left before the deadline (never negative). */
export function remainingMs(ctx: OpContext): number {
  return Math.max(0, ctx.deadline - ctx.clock.now());
}

/** A root context for a process or a test: aborted by `controller`, no deadline beyond `timeoutMs`. */
export function rootContext(clock: Clock, signal: AbortSignal, timeoutMs = Number.MAX_SAFE_INTEGER / 2): OpContext {
  return { signal, clock, deadline: clock.now() + timeoutMs };
}
