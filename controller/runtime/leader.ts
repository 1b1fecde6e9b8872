// Lease-based leader election, with controller-runtime's defaults (lease 15 s, renew deadline
// 10 s, retry 2 s). A standby never acts while another holder's lease is valid; a leader that has
// not renewed within the renew deadline has lost and says so through `lost` at once, before any
// standby may take over (renewDeadline < leaseDuration). The storage is behind LeaderLeaseStore
// (kube/leader-lease.ts), so this file has no Kubernetes client in it.
import type { Clock } from './clock.js';
import type { OpContext } from './context.js';
import { silentLog, type LogFn } from './log.js';
import { isOutcomeError } from './outcome.js';

/** What the Lease says, as plain values (times in epoch ms). */
export interface LeaderRecord {
  holderIdentity: string | undefined;
  leaseDurationSeconds: number | undefined;
  acquireTime: number | undefined;
  renewTime: number | undefined;
  leaseTransitions: number;
  resourceVersion: string;
}

export type LeaderWrite = Omit<LeaderRecord, 'resourceVersion'>;

export interface LeaderLeaseStore {
  /** The Lease, or undefined when it does not exist. */
  get(ctx: OpContext): Promise<LeaderRecord | undefined>;
  /** Creates it; fails with OutcomeError `AlreadyExists` when someone else was first. */
  create(ctx: OpContext, record: LeaderWrite): Promise<LeaderRecord>;
  /** Replaces it, guarded by `resourceVersion`; fails with OutcomeError `Conflict` when it changed. */
  update(ctx: OpContext, resourceVersion: string, record: LeaderWrite): Promise<LeaderRecord>;
}

type LeaderState = 'standby' | 'leader' | 'lost' | 'released';

export interface LeaderStateChange {
  state: LeaderState;
  /** The holder we saw (standby), or why leadership ended (lost). */
  holder?: string | undefined;
  reason?: string;
}

export interface LeaderElectorOptions {
  store: LeaderLeaseStore;
  /** Unique per process, e.g. `${POD_NAME}_${random}`. */
  identity: string;
  clock: Clock;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  onStateChange?: (change: LeaderStateChange) => void;
  log?: LogFn;
}

export interface LeaderElector {
  readonly identity: string;
  /** Resolves once this process holds the lease; rejects when `signal` aborts first. */
  acquire(signal: AbortSignal): Promise<void>;
  /** Aborts when leadership ends: renewals failed for renewDeadline, another holder took the lease, or release(). */
  readonly lost: AbortSignal;
  isLeader(): boolean;
  /** Stops renewing and clears holderIdentity so a standby takes over at once. Safe to call in any state. */
  release(): Promise<void>;
}

const LEADER_DEFAULTS = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;

export function createLeaderElector(opts: LeaderElectorOptions): LeaderElector {
  return new Elector(opts);
}

class LostLeadership extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LostLeadership';
  }
}

type Attempt = { ok: true } | { ok: false; holder: string | undefined; reason: string };

class Elector implements LeaderElector {
  readonly identity: string;
  private readonly lostController = new AbortController();
  private readonly stopRenew = new AbortController();
  private readonly leaseMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryMs: number;
  private readonly log: LogFn;
  private leading = false;
  private lastHolder: string | undefined = '';
  private renewLoop: Promise<void> | undefined;

  constructor(private readonly opts: LeaderElectorOptions) {
    this.identity = opts.identity;
    this.leaseMs = opts.leaseDurationMs ?? LEADER_DEFAULTS.leaseDurationMs;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? LEADER_DEFAULTS.renewDeadlineMs;
    this.retryMs = opts.retryPeriodMs ?? LEADER_DEFAULTS.retryPeriodMs;
    this.log = opts.log ?? silentLog;
    if (!(this.renewDeadlineMs < this.leaseMs))
      throw new Error('leader election: renewDeadline must be shorter than leaseDuration');
    if (!(this.retryMs < this.renewDeadlineMs))
      throw new Error('leader election: retryPeriod must be shorter than renewDeadline');
  }

  get lost(): AbortSignal {
    return this.lostController.signal;
  }

  isLeader(): boolean {
    return this.leading && !this.lost.aborted;
  }

  async acquire(signal: AbortSignal): Promise<void> {
    if (this.leading) return;
    if (this.lost.aborted)
      throw new LostLeadership('this elector has already lost or released leadership; make a new one');
    const { clock } = this.opts;
    // release() during acquire() stops it too.
    const stop = AbortSignal.any([signal, this.stopRenew.signal]);
    let acquiredAt: number;
    for (;;) {
      stop.throwIfAborted();
      const attemptAt = clock.now();
      const attempt = await this.tryAcquireOrRenew(this.ctx(stop, this.retryMs));
      if (attempt.ok) {
        acquiredAt = attemptAt;
        break;
      }
      if (attempt.holder !== this.lastHolder) {
        this.lastHolder = attempt.holder;
        this.change({ state: 'standby', holder: attempt.holder, reason: attempt.reason });
      }
      await clock.sleep(this.retryMs, stop);
    }
    if (this.stopRenew.signal.aborted) {
      // Released while our write was in flight: give the lease back rather than sit on it.
      await this.clearLease();
      throw new LostLeadership('released while acquiring');
    }
    this.leading = true;
    this.change({ state: 'leader' });
    this.renewLoop = this.renew(acquiredAt);
  }

  async release(): Promise<void> {
    const wasLeading = this.leading && !this.lost.aborted;
    this.stopRenew.abort();
    // Work stops before the lease is given up, so a successor never overlaps with us.
    this.end('released', 'released');
    await this.renewLoop;
    if (wasLeading) await this.clearLease();
  }

  private async clearLease(): Promise<void> {
    try {
      const ctx = this.ctx(new AbortController().signal, this.renewDeadlineMs);
      const current = await this.opts.store.get(ctx);
      if (!current || current.holderIdentity !== this.identity) return;
      const now = this.opts.clock.now();
      await this.opts.store.update(ctx, current.resourceVersion, {
        holderIdentity: undefined,
        // client-go's release: a 1 s lease, so even a standby that missed the clear sees it expired.
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: current.leaseTransitions,
      });
    } catch (err) {
      // The lease then expires by itself after leaseDuration.
      this.log('warn', 'leader election: cannot release the lease', { err: (err as Error).message });
    }
  }

  /** Renews every retryPeriod until renewDeadline passes without a successful renewal. */
  private async renew(acquiredAt: number): Promise<void> {
    const { clock } = this.opts;
    let lastRenew = acquiredAt;
    const stop = this.stopRenew.signal;
    while (!stop.aborted && !this.lost.aborted) {
      try {
        await clock.sleep(this.retryMs, stop);
      } catch {
        return;
      }
      const attemptAt = clock.now();
      // The call may not outlive the renew deadline: past it we have lost, whatever it returns.
      const budget = Math.max(0, lastRenew + this.renewDeadlineMs - attemptAt);
      const attempt = await this.tryAcquireOrRenew(this.ctx(stop, budget));
      if (stop.aborted) return;
      if (attempt.ok) {
        lastRenew = attemptAt;
        continue;
      }
      if (attempt.holder !== undefined && attempt.holder !== this.identity) {
        // Someone else holds a valid lease: they may be acting already, so stop now.
        return this.end('lost', `lease taken by ${attempt.holder}`, attempt.holder);
      }
      if (clock.now() - lastRenew >= this.renewDeadlineMs) {
        return this.end('lost', `no renewal within ${this.renewDeadlineMs} ms (${attempt.reason})`);
      }
    }
  }

  private async tryAcquireOrRenew(ctx: OpContext): Promise<Attempt> {
    const { store } = this.opts;
    const now = ctx.clock.now();
    const durationSeconds = Math.ceil(this.leaseMs / 1000);
    try {
      const current = await store.get(ctx);
      if (!current) {
        await store.create(ctx, {
          holderIdentity: this.identity,
          leaseDurationSeconds: durationSeconds,
          acquireTime: now,
          renewTime: now,
          leaseTransitions: 0,
        });
        return { ok: true };
      }
      const holder = current.holderIdentity;
      const ours = holder === this.identity;
      if (holder !== undefined && !ours && !this.expired(current, now))
        return { ok: false, holder, reason: 'held by another' };
      // Renewing keeps acquireTime; taking over (empty or expired) counts a transition.
      await store.update(ctx, current.resourceVersion, {
        holderIdentity: this.identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: ours ? (current.acquireTime ?? now) : now,
        renewTime: now,
        leaseTransitions: ours ? current.leaseTransitions : current.leaseTransitions + 1,
      });
      return { ok: true };
    } catch (err) {
      const reason = isOutcomeError(err) ? err.reason : (err as Error).message;
      // Conflict / AlreadyExists: another elector wrote first; the next read tells who.
      return { ok: false, holder: undefined, reason };
    }
  }

  /** renewTime + the holder's declared leaseDuration is in the past. */
  private expired(record: LeaderRecord, now: number): boolean {
    const renewed = record.renewTime ?? record.acquireTime;
    if (renewed === undefined) return true;
    const durationMs = (record.leaseDurationSeconds ?? Math.ceil(this.leaseMs / 1000)) * 1000;
    return renewed + durationMs < now;
  }

  private ctx(signal: AbortSignal, timeoutMs: number): OpContext {
    return { signal, clock: this.opts.clock, deadline: this.opts.clock.now() + timeoutMs };
  }

  private end(state: 'lost' | 'released', reason: string, holder?: string): void {
    if (this.lost.aborted) return;
    const wasLeading = this.leading;
    this.leading = false;
    this.lostController.abort(new LostLeadership(`leadership ${state}: ${reason}`));
    if (wasLeading || state === 'lost') this.change({ state, reason, holder });
  }

  private change(change: LeaderStateChange): void {
    try {
      this.opts.onStateChange?.(change);
    } catch (err) {
      this.log('error', 'leader election: onStateChange threw', { err: (err as Error).message });
    }
  }
}
