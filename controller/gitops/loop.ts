// The GitOps loop: poll → load → sync, one pass at a time. Each pass asks the remote for the branch
// head; only when it moved (or a trigger asks for a full pass) is the commit fetched, loaded and
// synced. Drift in the cluster re-syncs the last loaded commit at once, without Git. Triggers (the
// reconcile-now annotation, the webhook) during a pass cause exactly one more pass right after. A
// push webhook says the head moved: its pass fetches at once, without asking for the head first
// (one ref listing less, two of the four git HTTP requests of such a pass).
// A pass spends at most the poll interval on the annotation-only refreshes of unchanged plans, then
// polls again at once, so a push is never held back by the refreshes of the commit before it.
import { Annotation } from '../../schemas/api.js';
import { formatSourceProblem, hasDrift, type LoadedCommit } from '../core/gitops/sync-plan.js';
import type { ForgePort } from '../forge/port.js';
import type { KubeInformers, KubePort } from '../kube/port.js';
import type { PlanView } from '../kube/views.js';
import type { Clock } from '../runtime/clock.js';
import { rootContext, withTimeout, type OpContext } from '../runtime/context.js';
import { isOutcomeError, OutcomeKind } from '../runtime/outcome.js';
import type { Logger } from '../telemetry/logger.js';
import type { Metrics } from '../telemetry/metrics.js';
import { CommitStatuses } from './commit-status.js';
import { CommitRefusedError } from './source/errors.js';
import type { GitSource } from './source/index.js';
import type { ReportTree } from './source/reports.js';
import { clusterPlan, loadSnapshot, syncCommit, type SyncReport } from './sync/index.js';

/** What a pass was asked for, weakest first: re-sync the loaded commit; poll and sync in full; fetch at once (the head moved). */
type Want = 'resync' | 'poll' | 'fetch';
const WANT_RANK: Record<Want, number> = { resync: 0, poll: 1, fetch: 2 };

export interface GitopsLoopDeps {
  source: GitSource;
  kube: KubePort;
  informers: Pick<KubeInformers, 'patchPlans'>;
  operatorNamespace: string;
  clock: Clock;
  log: Logger;
  metrics?: Pick<Metrics, 'gitPollDuration' | 'gitPlansApplied' | 'gitPlansDeleted' | 'gitSourceProblems'>;
  pollIntervalMs: number;
  /** Random in [0, 1) for the ±10% jitter (Math.random in the shell, fixed in tests). */
  random: () => number;
  /** Commit statuses on the loaded commit (context `kangal-patch/<cluster>`); undefined: none. */
  commitStatus?: { forge: ForgePort; context: string };
  /** Deadline of one pass. */
  passTimeoutMs?: number;
}

interface GitopsState {
  lastPolledCommit: string | undefined;
  lastAppliedCommit: string | undefined;
  lastError: { reason: string; message: string } | undefined;
  lastReport: SyncReport | undefined;
}

/** The pass a wake-up asks for: the interval (or a re-sync with no good commit yet) polls, a poll request syncs in full, a push fetches. */
function passFor(next: Want | 'interval'): 'poll' | 'full' | 'fetch' {
  return next === 'interval' || next === 'resync' ? 'poll' : next === 'poll' ? 'full' : 'fetch';
}

/**
 * The GitOps loop of one leader: owns the commit loaded from the plans repository (and the last good
 * one, whose plan texts and reports others read), the pass asked for while one runs, and the retry
 * backoff, so that passes run one at a time and each wake-up is served once.
 */
export class GitopsLoop {
  private readonly current: GitopsState = {
    lastPolledCommit: undefined,
    lastAppliedCommit: undefined,
    lastError: undefined,
    lastReport: undefined,
  };
  private readonly listeners: ((r: SyncReport) => void)[] = [];
  private loaded: LoadedCommit | undefined;
  /**
   * The last commit synced without being refused (a cap): drift is put back from it, and its plan
   * texts and reports are what fileText and reportFiles give, while a refused head stands.
   */
  private good: LoadedCommit | undefined;
  private sources = new Map<string, string>();
  private reports: { commit: string; tree: ReportTree } | undefined;
  /** The texts and reports of the commit last fetched, taken over once its sync is not refused. */
  private fetched:
    | { commit: string; sources: Map<string, string>; reports: { commit: string; tree: ReportTree } | undefined }
    | undefined;
  private wake: (() => void) | undefined;
  private pending: Want | undefined;
  private failures = 0;
  private lastKind: string | undefined;
  private readonly statuses: CommitStatuses;

  constructor(private readonly deps: GitopsLoopDeps) {
    this.statuses = new CommitStatuses(deps.commitStatus, deps.log);
    deps.informers.patchPlans.onChange((_key, view, old) => {
      if (view && old && view.annotations[Annotation.ReconcileNow] !== old.annotations[Annotation.ReconcileNow]) {
        deps.log.info({ plan: view.name }, 'reconcile-now annotation changed: polling the plans repository');
        this.request('poll');
        return;
      }
      // A hand edit of a plan Git manages is put back at once, from the commit already loaded.
      if (this.driftedFromGit(view, old)) this.request('resync');
    });
  }

  /** Runs passes until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const deps = this.deps;
    // The first pass and each interval's: poll; a request made meanwhile: what it asked for.
    let next: Want | 'interval' = 'interval';
    while (!signal.aborted) {
      const ctx = withTimeout(rootContext(deps.clock, signal), deps.passTimeoutMs ?? 5 * 60_000);
      if (next === 'resync' && this.good) {
        try {
          await this.sync(ctx, this.good);
        } catch (err) {
          deps.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'GitOps re-sync failed');
        }
      } else {
        await this.pass(ctx, passFor(next));
      }
      if (signal.aborted) break;
      if (this.pending) {
        next = this.pending;
        this.pending = undefined;
        continue;
      }
      await new Promise<void>((resolve) => {
        const stop = new AbortController();
        const done = (): void => {
          stop.abort();
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
        deps.clock.sleep(this.nextDelay(), stop.signal).then(done, () => undefined);
      });
      next = this.pending ?? 'interval';
      this.pending = undefined;
    }
  }

  /** An immediate pass (after the running one, if any); the commit is re-synced even when the head did not move. */
  trigger(why: string): void {
    this.deps.log.info({ why }, 'GitOps poll triggered');
    this.request('fetch');
  }

  state(): GitopsState {
    return { ...this.current };
  }

  /** Called after every sync with its report (the report writer: last applied commit and file per plan). */
  onSynced(listener: (report: SyncReport) => void): void {
    this.listeners.push(listener);
  }

  /** The text of `file` (a plan file's repository path) in the last loaded commit (auto-update reads its templates here). */
  fileText(file: string): string | undefined {
    return this.sources.get(file);
  }

  /** The report files under status/ of the last loaded commit (with the source's readReports), and that commit. */
  reportFiles(): { commit: string; tree: ReportTree } | undefined {
    return this.reports;
  }

  private request(kind: Want): void {
    this.pending = this.pending === undefined || WANT_RANK[kind] > WANT_RANK[this.pending] ? kind : this.pending;
    this.wake?.();
  }

  /** The plan as changed (view; undefined once deleted) is one Git manages and differs from it in the good commit. */
  private driftedFromGit(view: PlanView | undefined, old: PlanView | undefined): boolean {
    const plan = view ?? old;
    const good = this.good;
    if (!good || !plan) return false;
    const git = good.plans.find((p) => p.name === plan.name);
    const c = view ? clusterPlan(view) : undefined;
    if (c && !c.managed) return false;
    return Boolean(git && c && !c.deleting && hasDrift(git.spec, git.rawSpec, c.spec));
  }

  /** `fetch`: the head moved (a push webhook), so fetch without listing the refs first; the commit is synced even when it is the one loaded. */
  private async pass(ctx: OpContext, want: 'poll' | 'full' | 'fetch'): Promise<void> {
    const deps = this.deps;
    const t0 = deps.clock.now();
    let outcome = 'unchanged';
    let full = want !== 'poll';
    try {
      const head = want === 'fetch' ? undefined : await deps.source.head(ctx);
      if (head !== undefined) this.current.lastPolledCommit = head;
      if (head === undefined || head !== this.loaded?.commit) {
        await this.fetchAndLoad(ctx);
        full = true;
      }
      if (full && this.loaded) {
        await this.sync(ctx, this.loaded);
        outcome = 'synced';
      }
      this.current.lastError = undefined;
      this.failures = 0;
    } catch (err) {
      outcome = isOutcomeError(err) ? err.reason : 'Error';
      this.recordFailure(err, outcome);
      await this.refusedStatus(ctx, err);
    } finally {
      deps.metrics?.gitPollDuration.observe({ outcome }, (deps.clock.now() - t0) / 1000);
    }
  }

  /** A failed pass: counted for the retry backoff, kept as the last error, and logged. */
  private recordFailure(err: unknown, outcome: string): void {
    this.lastKind = isOutcomeError(err) ? err.kind : OutcomeKind.Transient;
    this.failures++;
    this.current.lastError = { reason: outcome, message: err instanceof Error ? err.message : String(err) };
    this.deps.log.warn(
      { reason: outcome, err: this.current.lastError.message, kind: isOutcomeError(err) ? err.kind : undefined },
      'GitOps poll failed',
    );
  }

  /** Fetches the branch head; loads its plans when it is not the commit already loaded. */
  private async fetchAndLoad(ctx: OpContext): Promise<void> {
    const deps = this.deps;
    const snapshot = await deps.source.snapshot(ctx);
    this.current.lastPolledCommit = snapshot.commit;
    if (snapshot.commit === this.loaded?.commit) return;
    this.loaded = loadSnapshot(snapshot, deps.operatorNamespace);
    this.fetched = {
      commit: snapshot.commit,
      sources: new Map(
        snapshot.sources.map((s) => [
          s.file,
          typeof s.content === 'string' ? s.content : Buffer.from(s.content).toString('utf8'),
        ]),
      ),
      reports: snapshot.reports && { commit: snapshot.commit, tree: snapshot.reports },
    };
    deps.log.info(
      { commit: this.loaded.commit, plans: this.loaded.plans.length, problems: this.loaded.problems.length },
      'loaded plans from Git',
    );
  }

  private async sync(ctx: OpContext, commit: LoadedCommit): Promise<void> {
    const deps = this.deps;
    const deadline = { refreshUntil: deps.clock.now() + deps.pollIntervalMs };
    const report = await syncCommit(
      ctx,
      {
        kube: deps.kube,
        informers: deps.informers,
        operatorNamespace: deps.operatorNamespace,
        log: deps.log,
        onApplied: (r) => deps.metrics?.gitPlansApplied.inc({ reason: r }),
        onDeleted: () => deps.metrics?.gitPlansDeleted.inc(),
      },
      commit,
      deadline,
    );
    this.current.lastReport = report;
    deps.metrics?.gitSourceProblems.set(report.problems.length);
    if (report.refused) {
      // Nothing of a refused commit is used: the plans, texts and reports of the last good one stay.
      await this.statuses.synced(ctx, report);
      return;
    }
    this.good = commit;
    const fetched = this.fetched;
    if (fetched?.commit === commit.commit) {
      this.sources = fetched.sources;
      this.reports = fetched.reports;
    }
    for (const p of report.problems)
      deps.log.warn(
        { commit: commit.commit, file: p.file, problem: formatSourceProblem(p) },
        'invalid plan file in Git: not applied',
      );
    if (report.deferred.length > 0) {
      // Poll now: either the head is the same and the next pass goes on with these, or a newer
      // commit came and its own plans go first (these refreshes are then made for it instead).
      deps.log.debug(
        { commit: commit.commit, deferred: report.deferred.length },
        'poll interval spent: polling before the remaining annotation refreshes',
      );
      this.request('poll');
    }
    if (report.failed.length === 0 && report.deferred.length === 0) this.current.lastAppliedCommit = commit.commit;
    for (const l of this.listeners) l(report);
    await this.statuses.synced(ctx, report);
    const first = report.failed[0];
    if (first) throw first.error;
  }

  /** A commit refused for its pack is never loaded: its commit status says why. */
  private async refusedStatus(ctx: OpContext, err: unknown): Promise<void> {
    if (!(err instanceof CommitRefusedError) || err.commit === undefined) return;
    this.current.lastPolledCommit = err.commit;
    await this.statuses.set(ctx, err.commit, 'failure', `not applied: ${err.why}`);
  }

  /** Next wait: the interval ±10%, or a growing retry (1 s doubling, capped at the interval) after transient failures. */
  private nextDelay(): number {
    const jittered = this.deps.pollIntervalMs * (0.9 + 0.2 * this.deps.random());
    // Stalled (bad token, missing branch): a human must act, so the interval is right.
    if (this.failures === 0 || this.lastKind === OutcomeKind.Stalled) return jittered;
    return Math.min(jittered, 1000 * 2 ** Math.min(this.failures - 1, 16));
  }
}
