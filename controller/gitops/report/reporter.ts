// The report loop: every PatchPlan that rolls out gets a draft pull request from
// `kangal-patch/<cluster>/report/<plan>-<rolloutId>` adding status/<cluster>/<plan>.{md,yaml},
// updated as the rollout moves (only when the rendered files change, at most once per interval),
// and marked ready for review when the plan is terminal (a draft again if it runs again).
// Event-driven: plan and job informer events wake the plan's key; the rate limit is an exact timer
// (WorkQueue.addAfter).
//
// The branch is KangalPatch's own (core/gitops/bot-branch.ts): each pushed commit is recorded with
// a commit status, and before the PR is marked ready (and every RECHECK_MS while it is open and
// the plan over) the tip is made to hold exactly the rendered report and the PR's files are
// checked: a PR that changes anything but the report's own files is not marked ready (a draft
// again if it was), gets one comment naming them, and its head's status fails (publisher.ts).
//
// Restart-safe without memory: the PR is found again by its branch name, the writer finds an
// unchanged branch and makes no commit. What is only in memory: the time of the last commit (a
// restarted reporter may commit once sooner than the interval), the versions each node ran before
// its job (status keeps only the current one; a restart shows "—" for jobs already finished), and
// whether the human-edit comment was posted (posted again after a restart).
import {
  commitHeldBackMs,
  isReportable,
  isTerminal,
  rolloutId,
  REPORT_URL_ANNOTATION,
} from '../../core/report/index.js';
import type { JobView, PlanView } from '../../kube/views.js';
import type { OpContext } from '../../runtime/context.js';
import { WorkQueue, type PassResult } from '../../runtime/queue.js';
import { reportIndexPath } from '../../core/promotion/report-index.js';
import type { ReporterDeps } from './deps.js';
import { ReportPublisher, type PlanState, type RenderedReport } from './publisher.js';
import { contentDigest, renderReport, reportPaths, type BeforeVersions } from './render.js';
import { reportBranch } from './texts.js';

/** How often the branch of an open report PR of a finished plan is checked again for commits pushed since. */
const RECHECK_MS = 10 * 60_000;

/**
 * The report loop of one controller: owns the work queue of plan keys the informers wake, and what
 * it remembers between passes (each rollout's PlanState, the versions nodes ran before their jobs),
 * which the cluster's status does not keep. The branch and PR steps are the ReportPublisher's.
 */
export class Reporter {
  /** The queue (tests and metrics: depth). */
  readonly queue: WorkQueue;
  private readonly publisher: ReportPublisher;
  private readonly states = new Map<string, PlanState>();
  /** Versions a node ran before its job, by job UID (the status only keeps current ones). */
  private readonly before = new Map<string, BeforeVersions>();

  constructor(
    private readonly deps: ReporterDeps,
    signal: AbortSignal,
  ) {
    const { config, clock, log } = deps;
    this.publisher = new ReportPublisher(deps);
    this.queue = new WorkQueue({
      name: 'report',
      concurrency: 2,
      clock,
      backoff: config.backoff ?? { initialMs: 1000, maxMs: 60_000 },
      onError: (key, err, retryIn) =>
        log(
          'warn',
          `report of PatchPlan ${key} failed${retryIn === undefined ? '' : `; retrying in ${Math.round(retryIn / 1000)} s`}`,
          {
            plan: key,
            error: err instanceof Error ? err.message : String(err),
          },
        ),
    });
    deps.patchPlans.onChange((key, view) => {
      if (view) this.queue.add(key);
      else this.states.delete(key);
    });
    deps.patchJobs.onChange((_key, view, old) => {
      if (view) this.remember(view);
      else if (old) this.before.delete(old.uid);
      const plan = view?.spec?.patchPlanRef ?? old?.spec?.patchPlanRef;
      if (plan !== undefined) this.queue.add(plan);
    });
    this.queue.start((key, ctx) => this.pass(key, ctx), signal);
    // Plans already in the cache when we start (a restarted controller) get a pass too.
    void deps.patchPlans.synced.then(() => {
      for (const p of deps.patchPlans.list()) this.queue.add(p.name);
    });
  }

  /** Stops taking work and waits for running passes. */
  stop(): Promise<void> {
    return this.queue.drain();
  }

  private async pass(key: string, ctx: OpContext): Promise<PassResult | undefined> {
    const { config, log } = this.deps;
    const plan = this.deps.patchPlans.get(key);
    if (!plan || plan.deleting) return undefined;
    // Nothing rendered now could be written: render once the interval ends (5,000 nodes: the
    // renders of every job event's pass took a core, bench 2026-12-03).
    const held = this.heldBackMs(plan);
    if (held !== undefined) return { requeueAfterMs: held };
    if (config.signer && reportPaths(config.cluster, key).yamlPath === reportIndexPath(config.cluster)) {
      log(
        'warn',
        `report of PatchPlan ${key}: not written: ${reportIndexPath(config.cluster)} is the cluster's signed report index, so a plan named ${key} has no signed report`,
        { plan: key },
      );
      return undefined;
    }
    const jobs = this.jobsOf(key);
    for (const j of jobs) this.remember(j);
    if (!isReportable(plan.status.phase, jobs.length, plan.status.startTime)) return undefined;
    const st = this.stateFor(plan);
    if (st.stopped !== undefined) return undefined;
    const terminal = isTerminal(plan.status, jobs.length);
    const stop = await this.publisher.findPullRequest(ctx, st, terminal);
    if (stop !== undefined) {
      st.stopped = stop;
      log('info', `report of PatchPlan ${key}: not updating ${st.branch}: ${stop}`, { plan: key, branch: st.branch });
      return undefined;
    }
    const files = renderReport({
      plan,
      jobs,
      before: this.before,
      settings: { cluster: config.cluster, blobUrlBase: config.blobUrlBase },
      signer: config.signer,
    });
    const r: RenderedReport = { plan, jobs, st, files, digest: contentDigest(files) };
    const waitMs = await this.publisher.commitIfDue(ctx, r);
    await this.publisher.settlePullRequest(ctx, r, terminal);
    await this.recordUrl(ctx, plan, st);
    return this.nextPass(st, terminal, waitMs);
  }

  private jobsOf(plan: string): JobView[] {
    return this.deps.patchJobs.list().filter((j) => j.spec?.patchPlanRef === plan);
  }

  private remember(job: JobView): void {
    if (this.before.has(job.uid)) return;
    const s = job.status;
    // Before the job finishes, the current versions are the ones it started from.
    if (s.phase === 'Completed' && s.reason !== 'AlreadyAtTarget') return;
    if (s.currentTalosVersion === undefined && s.currentKubernetesVersion === undefined) return;
    this.before.set(job.uid, { talos: s.currentTalosVersion, kubernetes: s.currentKubernetesVersion });
  }

  /** The plan names its report's pull request once it is open (and again when a new rollout opens another). */
  private async recordUrl(ctx: OpContext, plan: PlanView, st: PlanState): Promise<void> {
    const url = st.pr?.url;
    const deps = this.deps;
    if (url === undefined || deps.annotatePlan === undefined || plan.annotations[REPORT_URL_ANNOTATION] === url) return;
    await deps.annotatePlan(ctx, plan.name, REPORT_URL_ANNOTATION, url);
  }

  private stateFor(plan: PlanView): PlanState {
    const rollout = rolloutId(plan.uid, plan.status.startTime);
    const st = this.states.get(plan.name);
    if (st && st.rollout === rollout) return st;
    const fresh: PlanState = {
      rollout,
      branch: reportBranch(this.deps.config.cluster, plan.name, rollout),
      pr: undefined,
      digest: undefined,
      lastCommitAt: undefined,
      stopped: undefined,
    };
    this.states.set(plan.name, fresh);
    return fresh;
  }

  /** ms the rate limit still holds back this rollout's next commit (see commitHeldBackMs); undefined when none is held back. */
  private heldBackMs(plan: PlanView): number | undefined {
    const st = this.states.get(plan.name);
    if (!st || st.stopped !== undefined || st.rollout !== rolloutId(plan.uid, plan.status.startTime)) return undefined;
    return commitHeldBackMs({
      lastCommitAt: st.lastCommitAt,
      now: this.deps.clock.now(),
      minIntervalMs: this.publisher.minIntervalMs,
    });
  }

  /**
   * The rate limit's wait; and while a finished plan's PR is open, its branch is checked again now
   * and then: a commit pushed after it was marked ready takes that back.
   */
  private nextPass(st: PlanState, terminal: boolean, waitMs: number | undefined): PassResult | undefined {
    const recheck =
      terminal && this.publisher.hasForge && st.stopped === undefined && st.pr?.state === 'open'
        ? (this.deps.config.recheckMs ?? RECHECK_MS)
        : Infinity;
    const next = Math.min(waitMs ?? Infinity, recheck);
    return next === Infinity ? undefined : { requeueAfterMs: next };
  }
}

/** Starts the report loop (see Reporter); it runs until `signal` aborts or `stop()`. */
export function startReporter(deps: ReporterDeps, signal: AbortSignal): Reporter {
  return new Reporter(deps, signal);
}
