// One wrapper around every client-node request: the OpContext's signal and deadline go onto the
// HTTP request, and whatever fails comes back as an OutcomeError.
//
// client-node has no per-call `signal` parameter, but its generated RequestContext has setSignal()
// and its fetch (undici, since 2.0) honours it; a per-call middleware sets it. So an abort or
// deadline really cancels the HTTP request instead of leaving it running behind a lost race.
//
// client-node 2.x builds a new undici Agent (keep-alive) for every request and never closes it, so
// each request's connection would linger idle for undici's keep-alive timeout (4 s): 50 requests,
// 50 open TLS connections to the apiserver. Clients made by makeClients share one pool instead
// (clients.ts poolConnections); for any other, the same middleware keeps that request's
// dispatcher and the call closes it once the response is read, as 1.4.0 (node-fetch, `Connection: close`) did.
import {
  Observable,
  PatchStrategy,
  setHeaderOptions,
  type ConfigurationOptions,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';
import { deadlineSignal, type OpContext } from '../runtime/context.js';
import { sharedDispatchers } from './clients.js';
import { toOutcomeError } from './errors.js';

export type CallOptions = ConfigurationOptions<ObservableMiddleware>;

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

function signalMiddleware(signal: AbortSignal, dispatchers: Dispatcher[]): ObservableMiddleware {
  return {
    pre: (request: RequestContext) => {
      request.setSignal(signal);
      const dispatcher = request.getDispatcher();
      if (dispatcher && !sharedDispatchers.has(dispatcher)) dispatchers.push(dispatcher);
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
export async function kubeCall<T>(
  ctx: OpContext,
  what: string,
  fn: (opts: CallOptions) => Promise<T>,
  extras: CallExtras = {},
): Promise<T> {
  const deadline = deadlineSignal(ctx);
  const signal = deadline.signal;
  const dispatchers: Dispatcher[] = [];
  let opts: CallOptions = { middleware: [signalMiddleware(signal, dispatchers)], middlewareMergeStrategy: 'append' };
  if (extras.patch === 'merge') opts = setHeaderOptions('Content-Type', PatchStrategy.MergePatch, opts);
  if (extras.patch === 'apply') opts = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply, opts);
  try {
    if (signal.aborted) throw signal.reason;
    return await fn(opts);
  } catch (err) {
    throw toOutcomeError(err, {
      what,
      signal: ctx.signal,
      deadlineExceeded: deadline.timedOut(),
      now: ctx.clock.now(),
    });
  } finally {
    deadline.dispose();
    // The response is read by now; close() would still wait for a request in flight, then
    // closes the Agent's idle socket.
    for (const d of dispatchers) d.close().catch(() => undefined);
  }
}
