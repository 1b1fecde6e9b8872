// Delivers notifications without ever holding up the rollout: `notify()` only appends to a bounded
// queue per receiver (when full, the oldest waiting event is dropped, counted and logged) and
// returns. One worker per receiver sends its queue in order, so a stalled or dead receiver delays
// only itself. Each request has a timeout; 5xx, 429 and network errors are retried with jittered
// backoff (Retry-After honoured, up to a cap); other answers are final. The body is built once per
// event and receiver, so every retry carries the same bytes, signature and idempotency key.
// URLs and secrets are never logged: a receiver is named by its `name`.
import type { NotifyConfig, NotifyReceiver } from '../../schemas/notify.js';
import { receiverBody, receiverWants, type NotifyEvent } from '../core/notify/index.js';
import { backoffDelay, type BackoffPolicy } from '../core/talos-flow.js';
import { parseGoDuration } from '../../schemas/duration.js';
import { parseRetryAfter } from '../registry/client.js';
import type { Clock } from '../runtime/clock.js';
import { deadlineSignal, rootContext, withTimeout, type OpContext } from '../runtime/context.js';
import { sha256Signature } from '../runtime/hmac.js';
import type { LogFn } from '../runtime/log.js';

const SIGNATURE_HEADER = 'X-KangalPatch-Signature';
const IDEMPOTENCY_HEADER = 'Idempotency-Key';
const EVENT_HEADER = 'X-KangalPatch-Event';

/** A Retry-After beyond this is not waited for: the event fails (a receiver asking for an hour is down). */
const MAX_RETRY_AFTER_MS = 5 * 60_000;
const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 1_000, maxMs: 60_000, factor: 2 };

export type NotifyResult = 'sent' | 'failed' | 'dropped';

export interface NotifierOptions {
  config: NotifyConfig;
  /** --cluster-name, shown in every message when set. */
  cluster: string | undefined;
  clock: Clock;
  log: LogFn;
  /** Counts each event per receiver (kangal_patch_notifications_total). */
  onResult?: (receiver: string, result: NotifyResult) => void;
  /** Retry delays (tests shorten them); jitter from `random`. */
  backoff?: BackoffPolicy;
  random?: () => number;
  fetch?: typeof fetch;
}

export interface Notifier {
  /** Queues the events for every receiver that wants them; never blocks, never throws. */
  notify(events: readonly NotifyEvent[]): void;
  /** Runs the receivers' workers until `signal` aborts; what is still queued then is abandoned (logged). */
  start(signal: AbortSignal): void;
  /** Settles when every worker stopped (after the start signal aborted). */
  stopped(): Promise<void>;
}

interface Delivery {
  event: NotifyEvent;
  body: string;
}

type FailedAttempt = { ok: false; retry: boolean; retryAfterMs?: number; why: string };
type Attempt = { ok: true } | FailedAttempt;

class ReceiverWorker {
  private readonly queue: Delivery[] = [];
  private wake: (() => void) | undefined;
  private readonly timeoutMs: number;

  constructor(
    readonly receiver: NotifyReceiver,
    private readonly opts: NotifierOptions & { backoff: BackoffPolicy; random: () => number; fetch: typeof fetch },
  ) {
    this.timeoutMs = parseGoDuration(receiver.timeout) ?? 10_000;
  }

  enqueue(d: Delivery): void {
    if (this.queue.length >= this.opts.config.queueSize) {
      const dropped = this.queue.shift();
      this.opts.onResult?.(this.receiver.name, 'dropped');
      this.opts.log('warn', "notification dropped: the receiver's queue is full", {
        receiver: this.receiver.name,
        event: dropped?.event.type,
        key: dropped?.event.key,
        queueSize: this.opts.config.queueSize,
      });
    }
    this.queue.push(d);
    this.wake?.();
  }

  async run(signal: AbortSignal): Promise<void> {
    const root = rootContext(this.opts.clock, signal);
    while (!signal.aborted) {
      const next = this.queue.shift();
      if (next) await this.deliver(root, next);
      else await this.idle(signal);
    }
    if (this.queue.length > 0)
      this.opts.log('info', 'notifications abandoned at shutdown', {
        receiver: this.receiver.name,
        count: this.queue.length,
      });
  }

  private idle(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.wake = undefined;
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.wake = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  private async deliver(root: OpContext, d: Delivery): Promise<void> {
    const name = this.receiver.name;
    const fields = { receiver: name, event: d.event.type, key: d.event.key };
    for (let attempt = 1; ; attempt++) {
      const result = await this.attempt(withTimeout(root, this.timeoutMs), d);
      if (root.signal.aborted) return;
      if (result.ok) {
        this.opts.onResult?.(name, 'sent');
        this.opts.log('debug', 'notification sent', { ...fields, attempt });
        return;
      }
      if (this.gaveUp(result, attempt, fields)) return;
      const waitMs = Math.max(result.retryAfterMs ?? 0, backoffDelay(this.opts.backoff, attempt, this.opts.random()));
      this.opts.log('debug', 'notification attempt failed; retrying', {
        ...fields,
        attempt,
        why: result.why,
        retryInMs: waitMs,
      });
      try {
        await this.opts.clock.sleep(waitMs, root.signal);
      } catch {
        return; // stopped
      }
    }
  }

  /**
   * Whether a failed attempt is the event's last: the answer is final, its Retry-After is too far
   * off, or no attempt is left. Counts and logs the failure when it is.
   */
  private gaveUp(result: FailedAttempt, attempt: number, fields: Record<string, unknown>): boolean {
    const tooLong = (result.retryAfterMs ?? 0) > MAX_RETRY_AFTER_MS;
    if (!result.retry || tooLong || attempt >= this.opts.config.maxAttempts) {
      this.opts.onResult?.(this.receiver.name, 'failed');
      this.opts.log('warn', 'notification failed', {
        ...fields,
        attempt,
        why: tooLong ? `${result.why}, Retry-After beyond ${MAX_RETRY_AFTER_MS / 1000} s` : result.why,
        retried: result.retry,
      });
      return true;
    }
    return false;
  }

  private async attempt(ctx: OpContext, d: Delivery): Promise<Attempt> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'kangal-patch',
      [EVENT_HEADER]: d.event.type,
      [IDEMPOTENCY_HEADER]: d.event.key,
    };
    if (this.receiver.type === 'webhook' && this.receiver.secret !== undefined)
      headers[SIGNATURE_HEADER] = sha256Signature(this.receiver.secret, d.body);
    const s = deadlineSignal(ctx);
    try {
      const res = await this.opts.fetch(this.receiver.url, {
        method: 'POST',
        headers,
        body: d.body,
        signal: s.signal,
        redirect: 'manual',
      });
      await res.body?.cancel().catch(() => undefined);
      if (res.ok) return { ok: true };
      const retry = res.status === 429 || res.status >= 500;
      const retryAfterMs = retry ? parseRetryAfter(res.headers.get('retry-after'), ctx.clock.now()) : undefined;
      return { ok: false, retry, why: `HTTP ${res.status}`, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
    } catch (err) {
      if (s.timedOut()) return { ok: false, retry: true, why: `no answer within ${this.timeoutMs} ms` };
      return { ok: false, retry: true, why: `network error (${networkCode(err)})` };
    } finally {
      s.dispose();
    }
  }
}

/** The error's code (ECONNREFUSED, ...), never its message: fetch messages can carry the URL. */
function networkCode(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (err instanceof Error && err.name !== 'TypeError') return err.name;
  return 'fetch failed';
}

export function createNotifier(options: NotifierOptions): Notifier {
  const opts = {
    ...options,
    backoff: options.backoff ?? DEFAULT_BACKOFF,
    random: options.random ?? Math.random,
    fetch: options.fetch ?? globalThis.fetch,
  };
  const workers = options.config.receivers.map((r) => new ReceiverWorker(r, opts));
  let running: Promise<void> = Promise.resolve();
  return {
    notify(events) {
      for (const e of events) {
        for (const w of workers) {
          if (!receiverWants(w.receiver, e)) continue;
          w.enqueue({ event: e, body: JSON.stringify(receiverBody(w.receiver.type, e, options.cluster)) });
        }
      }
    },
    start(signal) {
      running = Promise.all(workers.map((w) => w.run(signal))).then(() => undefined);
    },
    stopped: () => running,
  };
}
