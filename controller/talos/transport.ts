// How one Talos call is made: endpoint choice, connection, deadline, cancellation, retries.
//
// Retry rules (per call, bounded by maxAttempts and the context's deadline):
// - Every attempt first waits for its endpoint's channel to be READY (connect.ts). When it does
//   not become ready, the request was not sent: any call, idempotent or not, is tried again (the
//   next endpoint, or the same one after a backoff when it is the only one). A TLS diagnosis of that endpoint that finds a rejected handshake ends the call as
//   TlsRejected instead (other endpoints share the same credentials).
// - Once the request was sent, a failure of an idempotent call (`retry: 'idempotent'`: reads,
//   image pull) is retried on the next endpoint when transient; a failure of any other call is
//   returned to the caller as it is (`transient` per classification), never repeated here.
// - Moving to the next endpoint is immediate; after each full round of endpoints the next attempt
//   waits a jittered backoff on the context's clock (skipped when it would pass the deadline).
// Time: an attempt's budget is min(timeoutMs, what is left of the context's deadline), measured on
// the context's clock; it becomes the gRPC deadline of both the connection wait and the call. The
// backoff is the only sleep, on the context's clock. Aborting the context's signal ends the
// connection wait, the backoff or the in-flight call (call.cancel()) at once, as Canceled.
import * as grpc from '@grpc/grpc-js';
import { type BackoffPolicy, backoffDelay } from '../core/talos-flow.js';
import { type OpContext, remainingMs } from '../runtime/context.js';
import { systemClock } from '../runtime/clock.js';
import { watchdog } from '../runtime/watchdog.js';
import {
  type CallSite,
  StreamIdleError,
  callCode,
  callError,
  canceledError,
  deadlinePassedError,
  notConnectedError,
  tlsRejectedError,
} from './call-errors.js';
import type { ChannelSet } from './channels.js';
import { awaitReady, type Readiness } from './connect.js';
import type { TalosCredentials } from './credentials.js';
import { TalosApiError, TalosErrorKind } from './errors.js';
import { diagnoseTls } from './tls-diagnosis.js';

export interface CallSpec {
  /** e.g. `MachineService.Version` */
  method: string;
  node: string | undefined;
  /** `idempotent`: retried after transient failures; `unsent-only`: only when provably not sent. */
  retry: 'idempotent' | 'unsent-only';
  /** Deadline of one attempt (connection wait included), further bounded by the context's deadline. */
  timeoutMs: number;
  /** Streams only: an attempt that receives no message for this long is ended as StreamIdleError. */
  idleMs?: number;
}

/** A streaming call's spec, with what to tell about each message as it arrives. */
export interface StreamSpec<Res> extends CallSpec {
  onMessage?: (m: Res) => void;
}

export interface TransportOptions {
  maxAttempts: number;
  backoff: BackoffPolicy;
  /** Told once per call, after its last attempt: `OK` or the failure's code (metrics). */
  onCallEnd?: (method: string, code: string) => void;
}

/** gRPC definition of one method (what ts-proto generates per method). */
export interface MethodDef<Req, Res> {
  path: string;
  requestSerialize: (value: Req) => Buffer;
  responseDeserialize: (value: Buffer) => Res;
}

/** One attempt's call, started on a READY channel with the attempt's gRPC deadline. */
type Attempt<T> = (client: grpc.Client, deadline: number, signal: AbortSignal) => Promise<T>;

/** Where an attempt goes: the endpoint's index, and the previous attempt's failure (thrown instead when no time is left). */
interface AttemptSlot {
  index: number;
  last: TalosApiError | undefined;
}

type AttemptOutcome<T> = { ok: true; value: T } | { ok: false; error: TalosApiError };

/**
 * grpc-js measures deadlines against the system clock, so the attempt's time budget (measured on
 * the context's clock) becomes an absolute deadline in grpc-js's time base only here.
 */
function grpcDeadline(ms: number): number {
  return systemClock.now() + ms;
}

function metadataFor(node: string | undefined): grpc.Metadata {
  const m = new grpc.Metadata();
  if (node !== undefined) m.set('node', node);
  return m;
}

export class Transport {
  constructor(
    private readonly set: ChannelSet,
    private readonly opts: TransportOptions,
  ) {}

  unary<Req, Res>(ctx: OpContext, def: MethodDef<Req, Res>, req: Req, spec: CallSpec): Promise<Res> {
    return this.call(
      ctx,
      spec,
      (client, deadline, signal) =>
        new Promise<Res>((resolve, reject) => {
          const call = client.makeUnaryRequest(
            def.path,
            def.requestSerialize,
            def.responseDeserialize,
            req,
            metadataFor(spec.node),
            { deadline },
            (err, value) => {
              signal.removeEventListener('abort', cancel);
              if (err) reject(err);
              else if (value === undefined) reject(new Error('no response'));
              else resolve(value);
            },
          );
          const cancel = (): void => call.cancel();
          signal.addEventListener('abort', cancel, { once: true });
        }),
    );
  }

  /** Server-streaming call; resolves to every message once the stream ended OK. */
  stream<Req, Res>(ctx: OpContext, def: MethodDef<Req, Res>, req: Req, streamSpec: StreamSpec<Res>): Promise<Res[]> {
    const { onMessage, ...spec } = streamSpec;
    return this.call(
      ctx,
      spec,
      (client, deadline, signal) =>
        new Promise<Res[]>((resolve, reject) => {
          const out: Res[] = [];
          const call = client.makeServerStreamRequest(
            def.path,
            def.requestSerialize,
            def.responseDeserialize,
            req,
            metadataFor(spec.node),
            { deadline },
          );
          const cancel = (): void => call.cancel();
          signal.addEventListener('abort', cancel, { once: true });
          const idleMs = spec.idleMs;
          const idle = idleMs === undefined ? undefined : watchdog(ctx.clock, idleMs, cancel);
          call.on('data', (m: Res) => {
            idle?.reset();
            out.push(m);
            onMessage?.(m);
          });
          call.on('error', (err: Error) => {
            idle?.stop();
            signal.removeEventListener('abort', cancel);
            reject(idle?.fired() && idleMs !== undefined ? new StreamIdleError(idleMs) : err);
          });
          call.on('end', () => {
            idle?.stop();
            signal.removeEventListener('abort', cancel);
            resolve(out);
          });
        }),
    );
  }

  private async call<T>(ctx: OpContext, spec: CallSpec, attempt: Attempt<T>): Promise<T> {
    const onEnd = this.opts.onCallEnd;
    if (!onEnd) return this.attempts(ctx, spec, attempt);
    try {
      const value = await this.attempts(ctx, spec, attempt);
      onEnd(spec.method, 'OK');
      return value;
    } catch (err) {
      onEnd(spec.method, callCode(err));
      throw err;
    }
  }

  private async attempts<T>(ctx: OpContext, spec: CallSpec, attempt: Attempt<T>): Promise<T> {
    const n = this.set.endpoints.length;
    const start = this.set.preferred;
    let last: TalosApiError | undefined;
    for (let i = 0; i < this.opts.maxAttempts; i++) {
      const index = (start + i) % n;
      const outcome = await this.attemptOn(ctx, spec, attempt, { index, last });
      if (outcome.ok) {
        this.set.preferred = index;
        return outcome.value;
      }
      last = outcome.error;
      const next = i + 1;
      if (next >= this.opts.maxAttempts) break;
      // The next endpoint at once; after a full round of endpoints, a backoff first.
      if (next % n === 0 && !(await this.backoff(ctx, next / n, last))) break;
    }
    throw last ?? new TalosApiError({ kind: TalosErrorKind.Unknown, message: `Talos ${spec.method}: no attempt made` });
  }

  /** One attempt through one endpoint: its result, or a failure that may be retried; throws when the call must end. */
  private async attemptOn<T>(
    ctx: OpContext,
    spec: CallSpec,
    attempt: Attempt<T>,
    { index, last }: AttemptSlot,
  ): Promise<AttemptOutcome<T>> {
    const { endpoints, credentials } = this.set;
    const site: CallSite = { method: spec.method, node: spec.node, endpoint: endpoints[index] ?? '' };
    if (ctx.signal.aborted) throw canceledError(site, ctx.signal.reason);
    const budget = Math.min(spec.timeoutMs, remainingMs(ctx));
    if (budget <= 0) throw last ?? deadlinePassedError(site);
    const deadline = grpcDeadline(budget);
    const client = this.set.client(index);

    const readiness = await awaitReady(client, deadline, ctx.signal);
    if (readiness === 'aborted') throw canceledError(site, ctx.signal.reason);
    if (readiness !== 'ready') return notSent(site, readiness, credentials, ctx.signal);
    try {
      return { ok: true, value: await attempt(client, deadline, ctx.signal) };
    } catch (err) {
      const error = callError(err, site, ctx.signal, credentials.roles);
      // Sent: only an idempotent call may be repeated.
      if (spec.retry !== 'idempotent' || !error.transient) throw error;
      return { ok: false, error };
    }
  }

  /** Waits before round `round` + 1; false when that would pass the deadline. */
  private async backoff(ctx: OpContext, round: number, last: TalosApiError): Promise<boolean> {
    const wait = backoffDelay(this.opts.backoff, round, Math.random());
    if (wait >= remainingMs(ctx)) return false;
    try {
      await ctx.clock.sleep(wait, ctx.signal);
    } catch (err) {
      throw canceledError({ method: last.method ?? '', node: last.node, endpoint: last.endpoint ?? '' }, err);
    }
    return true;
  }
}

/**
 * An attempt whose endpoint never became ready: not sent. grpc-js says only "connection failed"; a
 * plain TLS dial says whether the handshake was refused, which no retry or other endpoint would fix.
 */
async function notSent(
  site: CallSite,
  readiness: Exclude<Readiness, 'ready' | 'aborted'>,
  credentials: TalosCredentials,
  signal: AbortSignal,
): Promise<AttemptOutcome<never>> {
  const why = await diagnoseTls(site.endpoint, credentials, signal);
  if (signal.aborted) throw canceledError(site, signal.reason);
  if (why !== undefined) throw tlsRejectedError(site, why);
  const error = notConnectedError(site, readiness);
  if (!error.transient) throw error;
  return { ok: false, error };
}
