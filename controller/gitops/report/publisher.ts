// One rollout's report on its bot branch and pull request: the rendered files committed when due,
// the draft PR opened, marked ready once the plan is over and the branch checks clean, and the
// branch left alone once a human edited the report or the PR was closed.
import { reportDue, REPORT_MIN_INTERVAL_MS } from '../../core/report/index.js';
import { markdownCell, markdownCode } from '../../core/markdown.js';
import type { PullRequestView } from '../../forge/port.js';
import type { JobView, PlanView } from '../../kube/views.js';
import type { OpContext } from '../../runtime/context.js';
import type { WriteResult } from '../write/index.js';
import { reportIndexFiles } from '../promotion/report-index.js';
import { guardPullRequest, isRecorded, recordCommit, type BranchGuard } from '../write/guard.js';
import { signaturePath } from '../promotion/signature.js';
import { reportIndexPath } from '../../core/promotion/report-index.js';
import type { ReporterDeps } from './deps.js';
import type { ReportFiles } from './render.js';
import { reportBody, reportTitle } from './texts.js';

export interface PlanState {
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
export interface RenderedReport {
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

/**
 * Writes a rollout's report to its branch and keeps its pull request in step. Owns what every
 * rollout's branch shares (the guard recording our commits, the files that are the report's own, the
 * PR labels); each rollout's memory is the PlanState the report loop passes in.
 */
export class ReportPublisher {
  readonly minIntervalMs: number;
  readonly hasForge: boolean;
  private readonly labels: string[];
  private readonly guard: BranchGuard;
  // A signed report also advances the cluster's signed report index (reportIndexFiles): the PR carries it too.
  private readonly indexFiles: string[];

  constructor(private readonly deps: Pick<ReporterDeps, 'config' | 'forge' | 'writer' | 'clock' | 'log'>) {
    const { config, forge } = deps;
    this.minIntervalMs = config.minIntervalMs ?? REPORT_MIN_INTERVAL_MS;
    this.labels = config.labels ?? ['kangal-patch', 'kangal-patch/report', `cluster/${config.cluster}`];
    this.hasForge = forge.kind !== 'none';
    this.guard = {
      forge,
      context: `kangal-patch/${config.cluster}/report`,
      what: 'rollout report',
      sameOnBase: deps.writer.sameOnBase?.bind(deps.writer),
    };
    this.indexFiles = config.signer
      ? [reportIndexPath(config.cluster), signaturePath(reportIndexPath(config.cluster))]
      : [];
  }

  /** Finds this rollout's PR by branch name (restart-safe); returns why to stop, if the PR says so. */
  async findPullRequest(ctx: OpContext, st: PlanState, terminal: boolean): Promise<string | undefined> {
    if (!this.hasForge || st.pr?.state === 'open') return undefined;
    const found = (await this.deps.forge.pullRequestsFor(ctx, st.branch))[0];
    if (!found) return undefined;
    if (found.state === 'open') st.pr = found;
    else if (!found.merged) return `pull request #${found.number} was closed without merging`;
    // Merged: the report is archived. A finished plan needs nothing more; a running one gets a new PR.
    else if (terminal) return `pull request #${found.number} was merged`;
    return undefined;
  }

  /** Writes the files when due; returns how long to wait when the rate limit holds a change back. */
  async commitIfDue(ctx: OpContext, r: RenderedReport): Promise<number | undefined> {
    const { plan, st, digest } = r;
    if (st.unrecorded !== undefined) {
      await recordCommit(ctx, this.guard, st.unrecorded);
      st.unrecorded = undefined;
    }
    const decision = reportDue({
      changed: digest !== st.digest,
      lastCommitAt: st.lastCommitAt,
      now: this.deps.clock.now(),
      minIntervalMs: this.minIntervalMs,
    });
    if (decision.action === 'wait') return decision.ms;
    if (decision.action === 'none') return undefined;
    const result = await this.writeReport(ctx, r);
    if (result.outcome === 'humanEdited') {
      await this.stopForHumanEdit(ctx, plan.name, st, result);
      return undefined;
    }
    st.digest = digest;
    return undefined;
  }

  /**
   * Once the branch holds our content: the PR exists, and is ready for review when the plan is
   * terminal and the branch final. A plan that starts again (a failed node's job deleted to retry
   * it, a cancelled plan resumed) turns it back into a draft, which cannot be merged mid-rollout.
   */
  async settlePullRequest(ctx: OpContext, r: RenderedReport, terminal: boolean): Promise<void> {
    const { config, forge, log } = this.deps;
    const { plan, st, files, digest } = r;
    const key = plan.name;
    if (!this.hasForge || st.digest === undefined || st.stopped !== undefined) return;
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
        labels: this.labels,
      });
      log('info', `report of PatchPlan ${key}: opened pull request #${st.pr.number}`, {
        plan: key,
        pr: st.pr.number,
        branch: st.branch,
      });
    }
    if (terminal && st.digest === digest) {
      await this.verifyAndMarkReady(ctx, r);
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

  private ownFiles(files: ReportFiles): string[] {
    return [files.markdownPath, files.yamlPath, ...(files.signature ? [files.signature.path] : []), ...this.indexFiles];
  }

  /** Writes the report files on the branch (no commit when the tip holds them); a pushed commit is recorded as ours. */
  private async writeReport(ctx: OpContext, { plan, jobs, st, files }: RenderedReport): Promise<WriteResult> {
    const { config, clock } = this.deps;
    const guard = this.guard;
    const key = plan.name;
    const signer = config.signer;
    const result = await this.deps.writer.write(ctx, {
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
      guarded: this.ownFiles(files),
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
  private async stopForHumanEdit(
    ctx: OpContext,
    key: string,
    st: PlanState,
    result: Extract<WriteResult, { outcome: 'humanEdited' }>,
  ): Promise<void> {
    const { forge, log } = this.deps;
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
      context: this.guard.context,
      description: `A commit not written by KangalPatch changed ${result.path}`.slice(0, 140),
    });
    if (!st.pr.draft) await forge.setDraft(ctx, st.pr.number, true);
  }

  /**
   * A finished plan's PR may be ready only while its branch is KangalPatch's: the tip holds the
   * rendered report (rewritten when it does not) and the PR changes no other file. Checked when it
   * is about to be marked ready, and again whenever its head moved.
   */
  private async verifyAndMarkReady(ctx: OpContext, r: RenderedReport): Promise<void> {
    const { forge, log } = this.deps;
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
    const written = await this.writeReport(ctx, r);
    if (written.outcome === 'humanEdited') {
      await this.stopForHumanEdit(ctx, key, st, written);
      return;
    }
    if (written.outcome === 'pushed') pr = { ...pr, headSha: written.commit };
    const g = await guardPullRequest(ctx, this.guard, pr, {
      own: this.ownFiles(files),
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
}
