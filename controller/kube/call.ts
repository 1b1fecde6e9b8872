// One wrapper around every client-node request: the OpContext's signal and deadline go onto the
// HTTP request, and whatever fails comes back as an OutcomeError.
//
// client-node 1.4.0 has no per-call `signal` parameter, but its generated RequestContext has
// setSignal() and node-fetch honours it; a per-call middleware sets it. So an abort or deadline
// really cancels the HTTP request instead of leaving it running behind a lost race.
import {
  Observable,
  PatchStrategy,
  setHeaderOptions,
  type ConfigurationOptions,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';
import { remainingMs, type OpContext } from '../runtime/context.js';
import { toOutcomeError } from './errors.js';

export type CallOptions = ConfigurationOptions<ObservableMiddleware>;

function signalMiddleware(signal: AbortSignal): ObservableMiddleware {
  return {
    pre: (request: RequestContext) => {
      request.setSignal(signal);
      return new Observable(Promise.resolve(request));
    },
    post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
  };
}

export interface CallExtras {
  /** Content-Type for PATCH bodies; client-node would pick JSON Patch. `apply`: server-side apply. */
  patch?: 'merge' | 'apply';
}

/**
 * Runs `fn` with per-call options carrying the context's signal and deadline. `what` names the
 * operation in error messages (`cordon node w1`).
 */
export async function kubeCall<T>(ctx: OpContext, what: string, fn: (opts: CallOptions) => Promise<T>, extras: CallExtras = {}): Promise<T> {
  const timeout = new AbortController();
  const stopTimer = new AbortController();
  const ms = remainingMs(ctx);
  // Node fires timers beyond 2^31-1 ms at once; "no deadline" root contexts use huge values.
  if (ms < 2 ** 31 - 1) {
    ctx.clock.sleep(ms, stopTimer.signal).then(
      () => timeout.abort(new DOMException('deadline exceeded', 'TimeoutError')),
      () => undefined,
    );
  }
  const signal = AbortSignal.any([ctx.signal, timeout.signal]);
  let opts: CallOptions = { middleware: [signalMiddleware(signal)], middlewareMergeStrategy: 'append' };
  if (extras.patch === 'merge') opts = setHeaderOptions('Content-Type', PatchStrategy.MergePatch, opts);
  if (extras.patch === 'apply') opts = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply, opts);
  try {
    if (signal.aborted) throw signal.reason;
    return await fn(opts);
  } catch (err) {
    throw toOutcomeError(err, { what, signal: ctx.signal, deadlineExceeded: timeout.signal.aborted, now: ctx.clock.now() });
  } finally {
    stopTimer.abort();
  }
}
