// Waiting for a channel to be connected before a call is sent. A call made on a channel that never
// became READY provably never reached the server, so even a non-idempotent request may then be
// sent through another endpoint; once a call was started on a READY channel, it may have arrived.
import * as grpc from '@grpc/grpc-js';
import type { OpContext } from '../runtime/context.js';

const ConnectivityState = grpc.connectivityState;

/**
 * `ready`: connected, a call may be sent. `failed`: the connection attempt failed (refused, TLS
 * handshake rejected, ...) or the channel is still backing off from an earlier failure.
 * `timeout`: still connecting when `ms` ran out. `closed`: the channel was shut down.
 * `aborted`: the context's signal fired.
 */
export type Readiness = 'ready' | 'failed' | 'timeout' | 'closed' | 'aborted';

/**
 * Resolves as soon as the channel is READY or its connection attempt failed. Unlike
 * `client.waitForReady`, a TRANSIENT_FAILURE ends the wait at once: grpc-js keeps reconnecting in
 * the background (sticky TRANSIENT_FAILURE), and waiting for that would hold a failover for the
 * whole attempt timeout. The timer is the context's clock; aborting ends the wait immediately.
 */
export function awaitReady(client: grpc.Client, ms: number, ctx: OpContext): Promise<Readiness> {
  const channel = client.getChannel();
  return new Promise((resolve) => {
    const timer = new AbortController();
    let done = false;
    const finish = (r: Readiness): void => {
      if (done) return;
      done = true;
      ctx.signal.removeEventListener('abort', onAbort);
      timer.abort();
      resolve(r);
    };
    const onAbort = (): void => finish('aborted');
    if (ctx.signal.aborted) return finish('aborted');
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    ctx.clock.sleep(ms, timer.signal).then(
      () => finish('timeout'),
      () => undefined, // stopped because the wait ended
    );

    const check = (): void => {
      if (done) return;
      let state: grpc.connectivityState;
      try {
        state = channel.getConnectivityState(true);
      } catch {
        return finish('closed');
      }
      if (state === ConnectivityState.READY) return finish('ready');
      if (state === ConnectivityState.TRANSIENT_FAILURE) return finish('failed');
      if (state === ConnectivityState.SHUTDOWN) return finish('closed');
      try {
        // No deadline here (the clock above bounds the wait): the watcher goes with the next state change.
        channel.watchConnectivityState(state, Infinity, check);
      } catch {
        finish('closed');
      }
    };
    check();
  });
}
