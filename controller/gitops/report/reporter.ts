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
// again if it was), gets one comment naming them, and its head's status fails.
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
  reportDue,
  rolloutId,
  REPORT_MIN_INTERVAL_MS,
  REPORT_URL_ANNOTATION,
} from '../../core/report/index.js';
import { markdownCell, markdownCode } from '../../core/markdown.js';
import type { ForgePort, PullRequestView } from '../../forge/port.js';
import type { JobView, PlanView } from '../../kube/views.js';
import type { Clock } from '../../runtime/clock.js';
import type { OpContext } from '../../runtime/context.js';
import type { Informer } from '../../runtime/informer.js';
import type { LogFn } from '../../runtime/log.js';
import { WorkQueue, type PassResult } from '../../runtime/queue.js';
import type { WriteRequest, WriteResult } from '../write/index.js';
import { reportIndexFiles } from '../promotion/report-index.js';
import { guardPullRequest, isRecorded, recordCommit, type BranchGuard } from '../write/guard.js';
import { signaturePath, type ReportSigner } from '../promotion/signature.js';
import { reportIndexPath } from '../../core/promotion/report-index.js';
import { contentDigest, renderReport, reportPaths, type BeforeVersions, type ReportFiles } from './render.js';

interface ReporterConfig {
  /** --cluster-name: in branch names, titles, labels and paths. */
  cluster: string;
  /** --git-branch: the branch report PRs merge into. */
  baseBranch: string;
  /** Minimum time between two report commits of one plan (default 30 s; tests shorten it). */
  minIntervalMs?: number;
  /** Web prefix for links to the plan file at its commit (`https://github.com/o/r/blob`); no link when unset. */
  blobUrlBase?: string;
  /** Labels of report PRs (default `kangal-patch`, `kangal-patch/report`, `cluster/<cluster>`). */
  labels?: string[];
  /** Backoff of failed passes (forge or git down). */
  backoff?: { initialMs: number; maxMs: number };
  /** How often the branch of a finished plan's open PR is checked again (default RECHECK_MS; tests shorten it). */
  recheckMs?: number;
  /** Signs the YAML twin (status/<cluster>/<plan>.sig beside it): promotion evidence for downstream clusters. */
  signer?: ReportSigner | undefined;
}

/** What the reporter needs from the git writer (BranchWriter implements it). */
export interface ReportWriter {
  write(ctx: OpContext, req: WriteRequest): Promise<WriteResult>;
  /** Of `paths`, those the branch holds exactly as the base does (BranchWriter.sameOnBase). */
  sameOnBase?(ctx: OpContext, branch: string, base: string, paths: readonly string[]): Promise<string[]>;
}

export interface ReporterDeps {
  config: ReporterConfig;
  patchPlans: Informer<PlanView>;
  patchJobs: Informer<JobView>;
  forge: ForgePort;
  writer: ReportWriter;
  clock: Clock;
  log: LogFn;
  /** Records the report pull request's URL on the plan (REPORT_URL_ANNOTATION), for `kangal-patch status`; undefined: not recorded. */
  annotatePlan?: (ctx: OpContext, plan: string, key: string, value: string) => Promise<void>;
}

export interface Reporter {
  /** Stops taking work and waits for running passes. */
  stop(): Promise<void>;
  /** The queue (tests and metrics: depth). */
  readonly queue: WorkQueue;
}

interface PlanState {
  rollout: string;
  branch: string;
  pr: PullRequestView | undefined;
  /**
   * SHA-256 of the rendered files the branch holds from us (contentDigest): tells a
   * change without keeping the files (megabytes for a plan of thousands of nodes) between passes.
   */
  digest: string | undefined;
  lastCommitAt: number | undefined;
  /** Set when we leave this rollout's branch alone: a human edited the report, or closed the PR unmerged. */
  stopped: string | undefined;
  /** A commit pushed but not recorded yet (the status write failed): recorded on the next pass. */
  unrecorded?: string | undefined;
  /** The PR head last found clean (ready), or found carrying foreign files (not ready): not checked again until the head moves. */
  verifiedHead?: string | undefined;
  blockedHead?: string | undefined;
  /** The foreign files a comment named (BranchVerdict.noted). */
  noted?: string | undefined;
}

/** One pass over a plan: the plan, its jobs and its rollout's state, and the report rendered from them (contentDigest). */
interface RenderedReport {
  plan: PlanView;
  jobs: readonly JobView[];
  st: PlanState;
  files: ReportFiles;
  digest: string;
}

/** The PR's head was checked already: found carrying foreign files, or found clean while the PR is ready. */
function checkedAlready(pr: PullRequestView, st: PlanState): boolean {
  return pr.headSha !== '' && (pr.headSha === st.blockedHead || (pr.headSha === st.verifiedHead && !pr.draft));
}

/** How often the branch of an open report PR of a finished plan is checked again for commits pushed since. */
const RECHECK_MS = 10 * 60_000;

const reportBranch = (cluster: string, plan: string, rollout: string): string =>
  `kangal-patch/${cluster}/report/${plan}-${rollout}`;

function reportTitle(cluster: string, plan: string): string {
  return `KangalPatch [${cluster}]: rollout report of ${plan}`;
}

interface ReportBodyInput {
  cluster: string;
  plan: string;
  rollout: string;
  /** The branch the report PR merges into. */
  base: string;
  paths: { markdownPath: string; yamlPath: string };
}

function reportBody({ cluster, plan, rollout, base, paths }: ReportBodyInput): string {
  return [
    `Rollout report of PatchPlan \`${plan}\` on cluster \`${cluster}\` (rollout ${rollout}).`,
    '',
    `KangalPatch updates \`${paths.markdownPath}\` and its machine-readable twin \`${paths.yamlPath}\` as the rollout progresses,`,
    'and marks this pull request ready for review when the plan finishes (a draft again if the plan runs again).',
    `Merge it to archive the report on \`${base}\`. Commits you add to this branch are kept; if you edit the report files, KangalPatch stops updating this pull request.`,
  ].join('\n');
}

export function startReporter(deps: ReporterDeps, signal: AbortSignal): Reporter {
  const { config, forge, clock, log } = deps;
  const minInterval = config.minIntervalMs ?? REPORT_MIN_INTERVAL_MS;
  const labels = config.labels ?? ['kangal-patch', 'kangal-patch/report', `cluster/${config.cluster}`];
  const states = new Map<string, PlanState>();
  /** Versions a node ran before its job, by job UID (the status only keeps current ones). */
  const before = new Map<string, BeforeVersions>();
  const hasForge = forge.kind !== 'none';
  const guard: BranchGuard = {
    forge,
    context: `kangal-patch/${config.cluster}/report`,
    what: 'rollout report',
    sameOnBase: deps.writer.sameOnBase?.bind(deps.writer),
  };
  // A signed report also advances the cluster's signed report index (reportIndexFiles): the PR carries it too.
  const indexFiles = config.signer
    ? [reportIndexPath(config.cluster), signaturePath(reportIndexPath(config.cluster))]
    : [];
  const ownFiles = (files: ReportFiles): string[] => [
    files.markdownPath,
    files.yamlPath,
    ...(files.signature ? [files.signature.path] : []),
    ...indexFiles,
  ];

  const queue = new WorkQueue({
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

  const jobsOf = (plan: string): JobView[] => deps.patchJobs.list().filter((j) => j.spec?.patchPlanRef === plan);

  const remember = (job: JobView): void => {
    if (before.has(job.uid)) return;
    const s = job.status;
    // Before the job finishes, the current versions are the ones it started from.
    if (s.phase === 'Completed' && s.reason !== 'AlreadyAtTarget') return;
    if (s.currentTalosVersion === undefined && s.currentKubernetesVersion === undefined) return;
    before.set(job.uid, { talos: s.currentTalosVersion, kubernetes: s.currentKubernetesVersion });
  };

  deps.patchPlans.onChange((key, view) => {
    if (view) queue.add(key);
    else states.delete(key);
  });
  deps.patchJobs.onChange((_key, view, old) => {
    if (view) remember(view);
    else if (old) before.delete(old.uid);
    const plan = view?.spec?.patchPlanRef ?? old?.spec?.patchPlanRef;
    if (plan !== undefined) queue.add(plan);
  });

  /** Finds this rollout's PR by branch name (restart-safe); returns why to stop, if the PR says so. */
  async function findPullRequest(ctx: OpContext, st: PlanState, terminal: boolean): Promise<string | undefined> {
    if (!hasForge || st.pr?.state === 'open') return undefined;
    const found = (await forge.pullRequestsFor(ctx, st.branch))[0];
    if (!found) return undefined;
    if (found.state === 'open') st.pr = found;
    else if (!found.merged) return `pull request #${found.number} was closed without merging`;
    // Merged: the report is archived. A finished plan needs nothing more; a running one gets a new PR.
    else if (terminal) return `pull request #${found.number} was merged`;
    return undefined;
  }

  /** Writes the report files on the branch (no commit when the tip holds them); a pushed commit is recorded as ours. */
  async function writeReport(ctx: OpContext, { plan, jobs, st, files }: RenderedReport): Promise<WriteResult> {
    const key = plan.name;
    const signer = config.signer;
    const result = await deps.writer.write(ctx, {
      branch: st.branch,
      base: config.baseBranch,
      files: {
        [files.markdownPath]: files.markdown,
        [files.yamlPath]: files.yaml,
        ...(files.signature ? { [files.signature.path]: files.signature.text } : {}),
      },
      // A signed report also advances the cluster's signed report index, built on the fetched tree's.
      ...(signer
        ? {
            derive: (read: (path: string) => Promise<string | undefined>) =>
              reportIndexFiles(read, config.cluster, signer, files),
          }
        : {}),
      message: `Report ${key} on ${config.cluster}: ${plan.status.phase ?? 'Pending'}, ${plan.status.completedNodes ?? 0}/${plan.status.totalNodes ?? jobs.length} nodes\n\nRollout ${st.rollout} of PatchPlan ${key}, written by KangalPatch from the cluster's status.`,
      guarded: ownFiles(files),
      recorded: (sha) => isRecorded(ctx, guard, sha),
    });
    if (result.outcome === 'pushed') {
      st.lastCommitAt = clock.now();
      st.unrecorded = result.commit;
      await recordCommit(ctx, guard, result.commit);
      st.unrecorded = undefined;
    }
    return result;
  }

  /** A commit KangalPatch did not write changed the report: leave the branch alone, say so once, and keep the PR from being merged as ours. */
  async function stopForHumanEdit(
    ctx: OpContext,
    key: string,
    st: PlanState,
    result: Extract<WriteResult, { outcome: 'humanEdited' }>,
  ): Promise<void> {
    st.stopped = `${result.author} changed ${result.path}`;
    log(
      'warn',
      `report of PatchPlan ${key}: a human commit changed ${result.path} on ${st.branch}; no longer updating it`,
      { plan: key, branch: st.branch },
    );
    if (!st.pr || st.pr.state !== 'open') return;
    await forge.comment(
      ctx,
      st.pr.number,
      `KangalPatch stopped updating this report: a commit by ${markdownCell(result.author)} changed ${markdownCode(result.path)}, and KangalPatch does not overwrite human edits, so this report is no longer what KangalPatch wrote. The cluster's live status: ${markdownCode(`kubectl get patchplan ${key}`)}.`,
    );
    await forge.setCommitStatus(ctx, result.commit, {
      state: 'failure',
      context: guard.context,
      description: `A commit not written by KangalPatch changed ${result.path}`.slice(0, 140),
    });
    if (!st.pr.draft) await forge.setDraft(ctx, st.pr.number, true);
  }

  /** Writes the files when due; returns how long to wait when the rate limit holds a change back. */
  async function commitIfDue(ctx: OpContext, r: RenderedReport): Promise<number | undefined> {
    const { plan, st, digest } = r;
    if (st.unrecorded !== undefined) {
      await recordCommit(ctx, guard, st.unrecorded);
      st.unrecorded = undefined;
    }
    const decision = reportDue({
      changed: digest !== st.digest,
      lastCommitAt: st.lastCommitAt,
      now: clock.now(),
      minIntervalMs: minInterval,
    });
    if (decision.action === 'wait') return decision.ms;
    if (decision.action === 'none') return undefined;
    const result = await writeReport(ctx, r);
    if (result.outcome === 'humanEdited') {
      await stopForHumanEdit(ctx, plan.name, st, result);
      return undefined;
    }
    st.digest = digest;
    return undefined;
  }

  /**
   * A finished plan's PR may be ready only while its branch is KangalPatch's: the tip holds the
   * rendered report (rewritten when it does not) and the PR changes no other file. Checked when it
   * is about to be marked ready, and again whenever its head moved.
   */
  async function verifyAndMarkReady(ctx: OpContext, r: RenderedReport): Promise<void> {
    const { plan, st, files } = r;
    const key = plan.name;
    const fresh = (await forge.pullRequestsFor(ctx, st.branch))[0];
    if (fresh?.state !== 'open') {
      if (fresh) st.stopped = `pull request #${fresh.number} was ${fresh.merged ? 'merged' : 'closed without merging'}`;
      st.pr = undefined;
      return;
    }
    let pr = fresh;
    st.pr = pr;
    if (checkedAlready(pr, st)) return;
    const written = await writeReport(ctx, r);
    if (written.outcome === 'humanEdited') {
      await stopForHumanEdit(ctx, key, st, written);
      return;
    }
    if (written.outcome === 'pushed') pr = { ...pr, headSha: written.commit };
    const g = await guardPullRequest(ctx, guard, pr, {
      own: ownFiles(files),
      noted: st.noted,
      consequence: 'does not mark this rollout report ready for review (it stays, or goes back to, a draft)',
    });
    st.noted = g.noted;
    if (g.foreign.length > 0) {
      st.blockedHead = pr.headSha;
      st.verifiedHead = undefined;
      log(
        'warn',
        `report of PatchPlan ${key}: ${st.branch} changes files outside the report (${g.foreign.slice(0, 5).join(', ')}${g.foreign.length > 5 ? ', …' : ''}); not marking pull request #${pr.number} ready`,
        { plan: key, pr: pr.number, branch: st.branch },
      );
      if (!pr.draft) await forge.setDraft(ctx, pr.number, true);
      st.pr = { ...pr, draft: true };
      return;
    }
    st.blockedHead = undefined;
    st.verifiedHead = pr.headSha;
    if (pr.draft) {
      await forge.setDraft(ctx, pr.number, false);
      st.pr = { ...pr, draft: false };
    }
  }

  /**
   * Once the branch holds our content: the PR exists, and is ready for review when the plan is
   * terminal and the branch final. A plan that starts again (a failed node's job deleted to retry
   * it, a cancelled plan resumed) turns it back into a draft, which cannot be merged mid-rollout.
   */
  async function settlePullRequest(ctx: OpContext, r: RenderedReport, terminal: boolean): Promise<void> {
    const { plan, st, files, digest } = r;
    const key = plan.name;
    if (!hasForge || st.digest === undefined || st.stopped !== undefined) return;
    if (st.pr?.state !== 'open') {
      // Opened as a draft: it is marked ready only once its branch is checked (verifyAndMarkReady).
      st.pr = await forge.openPullRequest(ctx, {
        head: st.branch,
        base: config.baseBranch,
        title: reportTitle(config.cluster, key),
        body: reportBody({
          cluster: config.cluster,
          plan: key,
          rollout: st.rollout,
          base: config.baseBranch,
          paths: files,
        }),
        draft: true,
        labels,
      });
      log('info', `report of PatchPlan ${key}: opened pull request #${st.pr.number}`, {
        plan: key,
        pr: st.pr.number,
        branch: st.branch,
      });
    }
    if (terminal && st.digest === digest) {
      await verifyAndMarkReady(ctx, r);
    } else if (!terminal && !st.pr.draft) {
      await forge.setDraft(ctx, st.pr.number, true);
      st.pr = { ...st.pr, draft: true };
      log(
        'info',
        `report of PatchPlan ${key}: the plan runs again; pull request #${st.pr.number} is a draft until it ends`,
        { plan: key, pr: st.pr.number },
      );
    }
  }

  /** The plan names its report's pull request once it is open (and again when a new rollout opens another). */
  async function recordUrl(ctx: OpContext, plan: PlanView, st: PlanState): Promise<void> {
    const url = st.pr?.url;
    if (url === undefined || deps.annotatePlan === undefined || plan.annotations[REPORT_URL_ANNOTATION] === url) return;
    await deps.annotatePlan(ctx, plan.name, REPORT_URL_ANNOTATION, url);
  }

  function stateFor(plan: PlanView): PlanState {
    const rollout = rolloutId(plan.uid, plan.status.startTime);
    const st = states.get(plan.name);
    if (st && st.rollout === rollout) return st;
    const fresh: PlanState = {
      rollout,
      branch: reportBranch(config.cluster, plan.name, rollout),
      pr: undefined,
      digest: undefined,
      lastCommitAt: undefined,
      stopped: undefined,
    };
    states.set(plan.name, fresh);
    return fresh;
  }

  /** ms the rate limit still holds back this rollout's next commit (see commitHeldBackMs); undefined when none is held back. */
  function heldBackMs(plan: PlanView): number | undefined {
    const st = states.get(plan.name);
    if (!st || st.stopped !== undefined || st.rollout !== rolloutId(plan.uid, plan.status.startTime)) return undefined;
    return commitHeldBackMs({ lastCommitAt: st.lastCommitAt, now: clock.now(), minIntervalMs: minInterval });
  }

  /**
   * The rate limit's wait; and while a finished plan's PR is open, its branch is checked again now
   * and then: a commit pushed after it was marked ready takes that back.
   */
  function nextPass(st: PlanState, terminal: boolean, waitMs: number | undefined): PassResult | undefined {
    const recheck =
      terminal && hasForge && st.stopped === undefined && st.pr?.state === 'open'
        ? (config.recheckMs ?? RECHECK_MS)
        : Infinity;
    const next = Math.min(waitMs ?? Infinity, recheck);
    return next === Infinity ? undefined : { requeueAfterMs: next };
  }

  async function pass(key: string, ctx: OpContext): Promise<PassResult | undefined> {
    const plan = deps.patchPlans.get(key);
    if (!plan || plan.deleting) return undefined;
    // Nothing rendered now could be written: render once the interval ends (5,000 nodes: the
    // renders of every job event's pass took a core, bench 2026-12-03).
    const held = heldBackMs(plan);
    if (held !== undefined) return { requeueAfterMs: held };
    if (config.signer && reportPaths(config.cluster, key).yamlPath === reportIndexPath(config.cluster)) {
      log(
        'warn',
        `report of PatchPlan ${key}: not written: ${reportIndexPath(config.cluster)} is the cluster's signed report index, so a plan named ${key} has no signed report`,
        { plan: key },
      );
      return undefined;
    }
    const jobs = jobsOf(key);
    for (const j of jobs) remember(j);
    if (!isReportable(plan.status.phase, jobs.length, plan.status.startTime)) return undefined;
    const st = stateFor(plan);
    if (st.stopped !== undefined) return undefined;
    const terminal = isTerminal(plan.status, jobs.length);
    const stop = await findPullRequest(ctx, st, terminal);
    if (stop !== undefined) {
      st.stopped = stop;
      log('info', `report of PatchPlan ${key}: not updating ${st.branch}: ${stop}`, { plan: key, branch: st.branch });
      return undefined;
    }
    const files = renderReport({
      plan,
      jobs,
      before,
      settings: { cluster: config.cluster, blobUrlBase: config.blobUrlBase },
      signer: config.signer,
    });
    const r: RenderedReport = { plan, jobs, st, files, digest: contentDigest(files) };
    const waitMs = await commitIfDue(ctx, r);
    await settlePullRequest(ctx, r, terminal);
    await recordUrl(ctx, plan, st);
    return nextPass(st, terminal, waitMs);
  }

  queue.start(pass, signal);
  // Plans already in the cache when we start (a restarted controller) get a pass too.
  void deps.patchPlans.synced.then(() => {
    for (const p of deps.patchPlans.list()) queue.add(p.name);
  });
  return { queue, stop: () => queue.drain() };
}
