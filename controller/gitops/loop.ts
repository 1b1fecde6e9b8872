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

export interface GitopsLoop {
  /** Runs passes until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
  /** An immediate pass (after the running one, if any); the commit is re-synced even when the head did not move. */
  trigger(why: string): void;
  state(): GitopsState;
  /** Called after every sync with its report (the report writer: last applied commit and file per plan). */
  onSynced(listener: (report: SyncReport) => void): void;
  /** The text of `file` (a plan file's repository path) in the last loaded commit (auto-update reads its templates here). */
  fileText(file: string): string | undefined;
  /** The report files under status/ of the last loaded commit (with the source's readReports), and that commit. */
  reportFiles(): { commit: string; tree: ReportTree } | undefined;
}

/** The pass a wake-up asks for: the interval (or a re-sync with no good commit yet) polls, a poll request syncs in full, a push fetches. */
function passFor(next: Want | 'interval'): 'poll' | 'full' | 'fetch' {
  return next === 'interval' || next === 'resync' ? 'poll' : next === 'poll' ? 'full' : 'fetch';
}

export function createGitopsLoop(deps: GitopsLoopDeps): GitopsLoop {
  const state: GitopsState = {
    lastPolledCommit: undefined,
    lastAppliedCommit: undefined,
    lastError: undefined,
    lastReport: undefined,
  };
  const listeners: ((r: SyncReport) => void)[] = [];
  let loaded: LoadedCommit | undefined;
  /**
   * The last commit synced without being refused (a cap): drift is put back from it, and its plan
   * texts and reports are what fileText and reportFiles give, while a refused head stands.
   */
  let good: LoadedCommit | undefined;
  let sources = new Map<string, string>();
  let reports: { commit: string; tree: ReportTree } | undefined;
  /** The texts and reports of the commit last fetched, taken over once its sync is not refused. */
  let fetched:
    | { commit: string; sources: Map<string, string>; reports: { commit: string; tree: ReportTree } | undefined }
    | undefined;
  let wake: (() => void) | undefined;
  let pending: Want | undefined;
  let failures = 0;
  let lastKind: string | undefined;
  const statusSent = new Set<string>();

  const request = (kind: Want): void => {
    pending = pending === undefined || WANT_RANK[kind] > WANT_RANK[pending] ? kind : pending;
    wake?.();
  };

  deps.informers.patchPlans.onChange((_key, view, old) => {
    if (view && old && view.annotations[Annotation.ReconcileNow] !== old.annotations[Annotation.ReconcileNow]) {
      deps.log.info({ plan: view.name }, 'reconcile-now annotation changed: polling the plans repository');
      request('poll');
      return;
    }
    // A hand edit of a plan Git manages is put back at once, from the commit already loaded.
    if (driftedFromGit(view, old)) request('resync');
  });

  /** The plan as changed (view; undefined once deleted) is one Git manages and differs from it in the good commit. */
  function driftedFromGit(view: PlanView | undefined, old: PlanView | undefined): boolean {
    const plan = view ?? old;
    if (!good || !plan) return false;
    const git = good.plans.find((p) => p.name === plan.name);
    const c = view ? clusterPlan(view) : undefined;
    if (c && !c.managed) return false;
    return Boolean(git && c && !c.deleting && hasDrift(git.spec, git.rawSpec, c.spec));
  }

  /** `fetch`: the head moved (a push webhook), so fetch without listing the refs first; the commit is synced even when it is the one loaded. */
  async function pass(ctx: OpContext, want: 'poll' | 'full' | 'fetch'): Promise<void> {
    const t0 = deps.clock.now();
    let outcome = 'unchanged';
    let full = want !== 'poll';
    try {
      const head = want === 'fetch' ? undefined : await deps.source.head(ctx);
      if (head !== undefined) state.lastPolledCommit = head;
      if (head === undefined || head !== loaded?.commit) {
        await fetchAndLoad(ctx);
        full = true;
      }
      if (full && loaded) {
        await sync(ctx, loaded);
        outcome = 'synced';
      }
      state.lastError = undefined;
      failures = 0;
    } catch (err) {
      outcome = isOutcomeError(err) ? err.reason : 'Error';
      recordFailure(err, outcome);
      await refusedStatus(ctx, err);
    } finally {
      deps.metrics?.gitPollDuration.observe({ outcome }, (deps.clock.now() - t0) / 1000);
    }
  }

  /** A failed pass: counted for the retry backoff, kept as the last error, and logged. */
  function recordFailure(err: unknown, outcome: string): void {
    lastKind = isOutcomeError(err) ? err.kind : OutcomeKind.Transient;
    failures++;
    state.lastError = { reason: outcome, message: err instanceof Error ? err.message : String(err) };
    deps.log.warn(
      { reason: outcome, err: state.lastError.message, kind: isOutcomeError(err) ? err.kind : undefined },
      'GitOps poll failed',
    );
  }

  /** Fetches the branch head; loads its plans when it is not the commit already loaded. */
  async function fetchAndLoad(ctx: OpContext): Promise<void> {
    const snapshot = await deps.source.snapshot(ctx);
    state.lastPolledCommit = snapshot.commit;
    if (snapshot.commit === loaded?.commit) return;
    loaded = loadSnapshot(snapshot, deps.operatorNamespace);
    fetched = {
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
      { commit: loaded.commit, plans: loaded.plans.length, problems: loaded.problems.length },
      'loaded plans from Git',
    );
  }

  async function sync(ctx: OpContext, commit: LoadedCommit): Promise<void> {
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
    state.lastReport = report;
    deps.metrics?.gitSourceProblems.set(report.problems.length);
    if (report.refused) {
      // Nothing of a refused commit is used: the plans, texts and reports of the last good one stay.
      await sendCommitStatus(ctx, report);
      return;
    }
    good = commit;
    if (fetched?.commit === commit.commit) ({ sources, reports } = fetched);
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
      request('poll');
    }
    if (report.failed.length === 0 && report.deferred.length === 0) state.lastAppliedCommit = commit.commit;
    for (const l of listeners) l(report);
    await sendCommitStatus(ctx, report);
    const first = report.failed[0];
    if (first) throw first.error;
  }

  async function sendCommitStatus(ctx: OpContext, report: SyncReport): Promise<void> {
    const cs = deps.commitStatus;
    if (!cs || statusSent.has(report.commit) || report.failed.length > 0 || report.deferred.length > 0) return;
    const ok = report.problems.length === 0;
    const summary = report.problems.map(formatSourceProblem).join('; ');
    const description = ok ? `${report.plans.length} plan(s) valid and applied` : summary;
    await setStatus(ctx, report.commit, ok ? 'success' : 'failure', description);
  }

  /** A commit refused for its pack is never loaded: its commit status says why. */
  async function refusedStatus(ctx: OpContext, err: unknown): Promise<void> {
    if (!(err instanceof CommitRefusedError) || err.commit === undefined) return;
    state.lastPolledCommit = err.commit;
    await setStatus(ctx, err.commit, 'failure', `not applied: ${err.why}`);
  }

  /** The commit status of a loaded or refused commit, once per commit. */
  async function setStatus(
    ctx: OpContext,
    commit: string,
    verdict: 'success' | 'failure',
    description: string,
  ): Promise<void> {
    const cs = deps.commitStatus;
    if (!cs || statusSent.has(commit)) return;
    try {
      await cs.forge.setCommitStatus(ctx, commit, {
        state: verdict,
        context: cs.context,
        description: description.length > 140 ? `${description.slice(0, 139)}…` : description,
      });
      statusSent.add(commit);
    } catch (err) {
      deps.log.warn(
        { commit, err: err instanceof Error ? err.message : String(err) },
        'could not set the commit status',
      );
    }
  }

  /** Next wait: the interval ±10%, or a growing retry (1 s doubling, capped at the interval) after transient failures. */
  function nextDelay(): number {
    const jittered = deps.pollIntervalMs * (0.9 + 0.2 * deps.random());
    // Stalled (bad token, missing branch): a human must act, so the interval is right.
    if (failures === 0 || lastKind === OutcomeKind.Stalled) return jittered;
    return Math.min(jittered, 1000 * 2 ** Math.min(failures - 1, 16));
  }

  return {
    state: () => ({ ...state }),
    trigger: (why) => {
      deps.log.info({ why }, 'GitOps poll triggered');
      request('fetch');
    },
    onSynced: (l) => listeners.push(l),
    fileText: (file) => sources.get(file),
    reportFiles: () => reports,
    async run(signal) {
      // The first pass and each interval's: poll; a request made meanwhile: what it asked for.
      let next: Want | 'interval' = 'interval';
      while (!signal.aborted) {
        const ctx = withTimeout(rootContext(deps.clock, signal), deps.passTimeoutMs ?? 5 * 60_000);
        if (next === 'resync' && good) {
          try {
            await sync(ctx, good);
          } catch (err) {
            deps.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'GitOps re-sync failed');
          }
        } else {
          await pass(ctx, passFor(next));
        }
        if (signal.aborted) break;
        if (pending) {
          next = pending;
          pending = undefined;
          continue;
        }
        await new Promise<void>((resolve) => {
          const stop = new AbortController();
          const done = (): void => {
            stop.abort();
            wake = undefined;
            resolve();
          };
          wake = done;
          signal.addEventListener('abort', done, { once: true });
          deps.clock.sleep(nextDelay(), stop.signal).then(done, () => undefined);
        });
        next = pending ?? 'interval';
        pending = undefined;
      }
    },
  };
}
