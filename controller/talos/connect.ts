// Waiting for a channel to be connected before a call is sent. A call made on a channel that never
// became READY provably never reached the server, so even a non-idempotent request may then be
// sent through another endpoint; once a call was started on a READY channel, it may have arrived.
import * as grpc from '@grpc/grpc-js';

const ConnectivityState = grpc.connectivityState;

/**
 * `ready`: connected, a call may be sent. `failed`: the connection attempt failed (refused, TLS
 * handshake rejected, ...) or the channel is still backing off from an earlier failure.
 * `timeout`: still connecting at the deadline. `closed`: the channel was shut down.
 * `aborted`: the context's signal fired.
 */
export type Readiness = 'ready' | 'failed' | 'timeout' | 'closed' | 'aborted';

/**
 * Resolves as soon as the channel is READY or its connection attempt failed. Unlike
 * `client.waitForReady`, a TRANSIENT_FAILURE ends the wait at once: grpc-js keeps reconnecting in
 * the background (sticky TRANSIENT_FAILURE), and waiting for that would hold a failover for the
 * whole attempt timeout. `deadline` is the attempt's gRPC deadline (grpc-js time base); aborting
 * ends the wait immediately (a watcher left behind goes with the next state change, the deadline,
 * or the channel's close).
 */
export function awaitReady(client: grpc.Client, deadline: number, signal: AbortSignal): Promise<Readiness> {
  const channel = client.getChannel();
  return new Promise((resolve) => {
    let done = false;
    const finish = (r: Readiness): void => {
      if (done) return;
      done = true;
      signal.removeEventListener('abort', onAbort);
      resolve(r);
    };
    const onAbort = (): void => finish('aborted');
    if (signal.aborted) return finish('aborted');
    signal.addEventListener('abort', onAbort, { once: true });

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
        channel.watchConnectivityState(state, deadline, (err) => (err ? finish('timeout') : check()));
      } catch {
        finish('closed');
      }
    };
    check();
  });
}
