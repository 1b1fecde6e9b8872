// A keyed work queue, as controller-runtime's: a key is queued at most once, processed by at most one
// worker at a time (an add while it runs re-queues it after), delayed adds keep the earliest time,
// failures back off per key, and at most `concurrency` keys are processed at once. Ready keys are
// taken in arrival order, or by `order` when given.
import type { Clock } from './clock.js';
import type { OpContext } from './context.js';
import { OutcomeKind, isOutcomeError } from './outcome.js';
import { armTimer, type LongTimer, type TimerHost } from './timer.js';

export interface PassResult {
  /** Look at this key again after this long (exact timers: deadlines, windows, backoff the pass chose). */
  requeueAfterMs?: number | undefined;
}

export type Reconcile = (key: string, ctx: OpContext) => Promise<PassResult | undefined>;

interface QueueBackoff {
  initialMs: number;
  maxMs: number;
}

export interface WorkQueueOptions {
  name: string;
  concurrency: number;
  clock: Clock;
  backoff?: QueueBackoff;
  /** Deadline of one pass. */
  passTimeoutMs?: number;
  /** Called for every failed pass (logging, metrics). */
  onError?: (key: string, err: unknown, retryInMs: number | undefined) => void;
  /** Called after every pass (metrics). */
  onPass?: (key: string, durationMs: number, ok: boolean) => void;
  random?: () => number;
  /**
   * Which ready key a worker takes first: the lowest order, equal orders in arrival order. Read once
   * when the key is queued. Without it the queue is first in, first out.
   */
  order?: (key: string) => number;
  /** Where delayed adds arm their timers (tests); the process's timers by default. */
  timers?: TimerHost;
}

const DEFAULT_BACKOFF: QueueBackoff = { initialMs: 100, maxMs: 30_000 };

export class WorkQueue {
  /** Ready keys, sorted by rank (then arrival): a worker takes the first. */
  private readonly ready: { key: string; rank: number }[] = [];
  private readonly queued = new Set<string>();
  private readonly running = new Set<string>();
  /** Keys added while running: processed again once the running pass ends. */
  private readonly dirty = new Set<string>();
  private readonly timers = new Map<string, { at: number; timer: LongTimer }>();
  private readonly failures = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private reconcile: Reconcile | undefined;
  private signal: AbortSignal | undefined;
  private stopped = false;

  constructor(private readonly opts: WorkQueueOptions) {}

  /** Keys waiting to be processed now (not counting delayed ones). */
  depth(): number {
    return this.ready.length;
  }

  add(key: string): void {
    if (this.stopped) return;
    this.cancelTimer(key);
    if (this.running.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.enqueue(key);
    this.pump();
  }

  /** Adds the key after `ms` (any length: timers re-arm past 2^31-1 ms); an earlier pending add wins. */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = this.opts.clock.now() + ms;
    const existing = this.timers.get(key);
    if (existing && existing.at <= at) return;
    existing?.timer.cancel();
    const timer = armTimer(
      ms,
      () => {
        this.timers.delete(key);
        this.add(key);
      },
      { ref: false, ...(this.opts.timers ? { host: this.opts.timers } : {}) },
    );
    this.timers.set(key, { at, timer });
  }

  /** Starts processing with `reconcile`; passes get a context aborted with `signal`. */
  start(reconcile: Reconcile, signal: AbortSignal): void {
    this.reconcile = reconcile;
    this.signal = signal;
    signal.addEventListener('abort', () => this.shutDown(), { once: true });
    this.pump();
  }

  /** Stops taking work; resolves once running passes ended (they see their signal aborted). */
  async drain(): Promise<void> {
    this.shutDown();
    await Promise.allSettled([...this.inFlight]);
  }

  private shutDown(): void {
    this.stopped = true;
    for (const { timer } of this.timers.values()) timer.cancel();
    this.timers.clear();
    this.ready.length = 0;
    this.queued.clear();
    this.dirty.clear();
  }

  /** After every ready key of the same or a lower rank (binary search: the list is kept sorted). */
  private enqueue(key: string): void {
    const rank = this.opts.order?.(key) ?? 0;
    let lo = 0;
    let hi = this.ready.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.ready[mid]?.rank ?? 0) <= rank) lo = mid + 1;
      else hi = mid;
    }
    this.ready.splice(lo, 0, { key, rank });
  }

  private cancelTimer(key: string): void {
    const t = this.timers.get(key);
    if (!t) return;
    t.timer.cancel();
    this.timers.delete(key);
  }

  private pump(): void {
    const reconcile = this.reconcile;
    const signal = this.signal;
    if (!reconcile || !signal || this.stopped) return;
    while (this.running.size < this.opts.concurrency && this.ready.length > 0) {
      const key = this.ready.shift()?.key;
      if (key === undefined) break;
      this.queued.delete(key);
      this.running.add(key);
      const pass = this.runPass(key, reconcile, signal).finally(() => {
        this.inFlight.delete(pass);
        this.running.delete(key);
        if (this.dirty.delete(key)) this.add(key);
        this.pump();
      });
      this.inFlight.add(pass);
    }
  }

  private async runPass(key: string, reconcile: Reconcile, signal: AbortSignal): Promise<void> {
    const clock = this.opts.clock;
    const started = clock.now();
    const ctx: OpContext = { signal, clock, deadline: started + (this.opts.passTimeoutMs ?? 5 * 60_000) };
    try {
      const result = await reconcile(key, ctx);
      this.failures.delete(key);
      this.opts.onPass?.(key, clock.now() - started, true);
      if (result?.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      this.opts.onPass?.(key, clock.now() - started, false);
      if (signal.aborted) return;
      const retryIn = this.retryDelay(key, err);
      this.opts.onError?.(key, err, retryIn);
      if (retryIn !== undefined) this.addAfter(key, retryIn);
    }
  }

  /** Stalled: no retry (the pass recorded why). Waiting: its time. Anything else: per-key backoff. */
  private retryDelay(key: string, err: unknown): number | undefined {
    if (isOutcomeError(err)) {
      if (err.kind === OutcomeKind.Stalled) return undefined;
      if (err.kind === OutcomeKind.Waiting && err.retryAfterMs !== undefined) return err.retryAfterMs;
    }
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    const b = this.opts.backoff ?? DEFAULT_BACKOFF;
    const base = Math.min(b.maxMs, b.initialMs * 2 ** (n - 1));
    return Math.round(base / 2 + (base / 2) * (this.opts.random ?? Math.random)());
  }
}
