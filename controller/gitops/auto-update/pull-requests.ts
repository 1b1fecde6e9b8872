// The proposal pull requests of the auto-update templates on the forge: read back (stale open ones
// closed), the decision's action performed (the child plan written on the proposal branch, its PR
// opened or refreshed, a superseded one closed), an open one blocked, unblocked or closed as its
// upstream evidence says, all of a deleted template's closed, and each open one guarded (a draft
// while it changes more than its child plan file).
import type { PullRequestView } from '../../forge/port.js';
import type { AutoUpdateAction, Proposal } from '../../core/auto-update/decide.js';
import { markdownCell } from '../../core/markdown.js';
import { proposalFate } from '../../core/promotion/decide.js';
import type { PlanView } from '../../kube/views.js';
import type { OpContext } from '../../runtime/context.js';
import { guardPullRequest, isRecorded, recordCommit, type BranchGuard } from '../write/guard.js';
import { evidenceOf, type PromotionGate } from '../promotion/gate.js';
import { proposalBody } from './body.js';
import type { AutoUpdateDeps } from './deps.js';
import {
  BLOCKED_MARK,
  proposalBranch,
  proposalBranchPrefix,
  proposalLabels,
  proposalTitle,
  readProposals,
  ROLLED_BACK_MARK,
  SUPERSEDED_MARK,
  TEMPLATE_GONE_MARK,
  type ProposalPr,
  type ProposalsOnForge,
} from './proposals.js';
import { childFileOf, childPlanFor, previewOf } from './proposed-plan.js';

interface ProposeInput {
  /** The lowest Talos version on the template's nodes. */
  current: string;
  proposal: Proposal;
  /** The open proposal this one replaces (closed already). */
  supersedes: ProposalPr | undefined;
  /** The upstream evidence section of the body (autoUpdate.promotion). */
  evidence: string[] | undefined;
}

interface ActInput {
  current: string;
  action: Exclude<AutoUpdateAction, { type: 'none' }>;
  open: ProposalPr | undefined;
  promo: PromotionGate | undefined;
}

/**
 * The forge side of the auto-update proposals. Owns the branch guard of the proposal branches and
 * what it did to each proposal PR (the foreign files it commented on, whether it made the PR a
 * draft), so a PR is commented on once and made ready again only when KangalPatch drafted it.
 */
export class ProposalPullRequests {
  // Proposal branches are KangalPatch's own (core/gitops/bot-branch.ts): each pushed commit is
  // recorded, and an open proposal whose PR changes more than its child plan file is turned into a
  // draft with one comment naming the files and a failing status (ready again once it is clean).
  private readonly guard: BranchGuard;
  /** Per proposal PR: the foreign files commented on, and whether KangalPatch made it a draft. */
  private readonly guarded = new Map<number, { noted: string | undefined; drafted: boolean }>();

  constructor(private readonly deps: AutoUpdateDeps) {
    this.guard = {
      forge: deps.forge,
      context: `kangal-patch/${deps.config.cluster}/auto-update`,
      what: 'auto-update proposal',
      sameOnBase: deps.writer.sameOnBase?.bind(deps.writer),
    };
  }

  /** The template's proposals as the forge has them; of several open ones, the newest stays open (closeStale). */
  async proposalsOnForge(ctx: OpContext, key: string): Promise<ProposalsOnForge> {
    const prefix = proposalBranchPrefix(this.deps.config.cluster, key);
    const onForge = readProposals(await this.deps.forge.pullRequestsWithPrefix(ctx, prefix), prefix);
    const [first, ...stale] = onForge.open;
    if (first) await this.closeStale(ctx, first, stale);
    return onForge;
  }

  /**
   * An open proposal whose upstream evidence changed: a later failure upstream marks it blocked (a
   * comment and the title, once), a clean rollout after it unmarks it, a rollback closes it.
   * Returns the proposal if it is still open.
   */
  async settleOpenProposal(
    ctx: OpContext,
    open: ProposalPr | undefined,
    promo: PromotionGate | undefined,
  ): Promise<ProposalPr | undefined> {
    const { forge, log } = this.deps;
    const verdict = open && promo?.outcome.verdicts.find((v) => v.version === open.version);
    if (!open || !promo || !verdict) return open;
    const blocked = open.pr.title.endsWith(BLOCKED_MARK);
    const fate = proposalFate(verdict, blocked);
    const at = `(read from ${promo.evidence.commit.slice(0, 12)})`;
    if (fate.type === 'close') {
      await this.closeProposal(
        ctx,
        open.pr,
        `KangalPatch closed this proposal: ${fate.because.message} ${at}. ${open.version} is no longer proven upstream.`,
        ROLLED_BACK_MARK,
      );
      return undefined;
    }
    if (fate.type === 'block') {
      await forge.comment(
        ctx,
        open.pr.number,
        `⚠️ Blocked by an upstream failure: ${markdownCell(fate.because.message)} ${at}. Review the upstream report before merging; KangalPatch removes the mark when a later upstream rollout completes cleanly.`,
      );
      const pr = await forge.updatePullRequest(ctx, open.pr.number, { title: `${open.pr.title}${BLOCKED_MARK}` });
      log('info', `auto-update: marked #${pr.number} blocked: ${fate.because.message}`, {
        pr: pr.number,
        version: open.version,
      });
      return { ...open, pr };
    }
    if (fate.type === 'unblock') {
      await forge.comment(
        ctx,
        open.pr.number,
        `The upstream stages prove ${open.version} again ${at}: no longer blocked.`,
      );
      return {
        ...open,
        pr: await forge.updatePullRequest(ctx, open.pr.number, { title: open.pr.title.slice(0, -BLOCKED_MARK.length) }),
      };
    }
    return open;
  }

  /** The open proposal is checked on every check, not only when it is written. */
  async guardOpen(ctx: OpContext, template: PlanView, open: ProposalPr | undefined): Promise<void> {
    const file = open && childFileOf(template, open.version);
    if (open && file !== undefined) await this.guardProposal(ctx, open.pr, file);
  }

  /** The decision's one action: propose, or supersede the open proposal. */
  async act(
    ctx: OpContext,
    template: PlanView,
    { current, action: a, open, promo }: ActInput,
  ): Promise<{ version: string; url: string }> {
    // Superseding closes the old PR first, so two are never open; a crash before the new one is
    // opened leaves none, and the next check proposes the newest again (superseded is no skip).
    const old = a.type === 'supersede' ? open : undefined;
    if (old) await this.closeProposal(ctx, old.pr, undefined, SUPERSEDED_MARK);
    const pr = await this.propose(ctx, template, {
      current,
      proposal: a.proposal,
      supersedes: old,
      evidence: promo && evidenceOf(promo, a.proposal.version, this.deps.blobUrlBase),
    });
    if (old)
      await this.deps.forge.comment(
        ctx,
        old.pr.number,
        `KangalPatch closed this proposal: Talos ${a.proposal.version} is newer and proposed in #${pr.number} instead.`,
      );
    return { version: a.proposal.version, url: pr.url };
  }

  /** The template is gone (its file left Git) or no longer a template: its open proposals are closed. */
  async closeAll(ctx: OpContext, key: string): Promise<void> {
    const { config, forge } = this.deps;
    const prefix = proposalBranchPrefix(config.cluster, key);
    const open = readProposals(await forge.pullRequestsWithPrefix(ctx, prefix), prefix).open;
    for (const o of open) {
      await this.closeProposal(
        ctx,
        o.pr,
        `KangalPatch closed this proposal: the auto-update template \`${key}\` was deleted (or its \`autoUpdate\` disabled) on cluster \`${config.cluster}\`, so nothing follows its releases any more.`,
        TEMPLATE_GONE_MARK,
      );
    }
  }

  /** `mark` goes on the title: KangalPatch closed it, so it is no human skip. */
  private async closeProposal(
    ctx: OpContext,
    pr: PullRequestView,
    comment: string | undefined,
    mark: typeof SUPERSEDED_MARK | typeof TEMPLATE_GONE_MARK | typeof ROLLED_BACK_MARK,
  ): Promise<void> {
    const { forge, log } = this.deps;
    if (comment !== undefined) await forge.comment(ctx, pr.number, comment);
    await forge.updatePullRequest(ctx, pr.number, {
      state: 'closed',
      ...(pr.title.endsWith(mark) ? {} : { title: `${pr.title}${mark}` }),
    });
    log('info', `auto-update: closed pull request #${pr.number} (${pr.head})`, {
      pr: pr.number,
      branch: pr.head,
      mark: mark.trim(),
    });
  }

  /** More than one open proposal only when someone reopened an old one: the newest stays open. */
  private async closeStale(ctx: OpContext, open: ProposalPr, stale: readonly ProposalPr[]): Promise<void> {
    for (const s of stale)
      await this.closeProposal(
        ctx,
        s.pr,
        `KangalPatch closed this proposal: #${open.pr.number} proposes the newer ${open.version}.`,
        SUPERSEDED_MARK,
      );
  }

  /** Writes the child plan file on the proposal branch and opens (or refreshes) its PR. */
  private async propose(
    ctx: OpContext,
    template: PlanView,
    { current, proposal, supersedes, evidence }: ProposeInput,
  ): Promise<PullRequestView> {
    const { config, log } = this.deps;
    const key = template.name;
    const { file, child, childFile, doc } = childPlanFor(this.deps, template, proposal.version);
    const branch = proposalBranch(config.cluster, key, proposal.version);
    const result = await this.deps.writer.write(ctx, {
      branch,
      base: config.baseBranch,
      files: { [childFile]: child.text },
      message: `Propose Talos ${proposal.version} for ${key} on ${config.cluster}\n\nChild plan ${child.name} of auto-update template ${key} (${file}), ${proposal.step} step from ${current}, written by KangalPatch.`,
      recorded: (sha) => isRecorded(ctx, this.guard, sha),
    });
    if (result.outcome === 'pushed') await recordCommit(ctx, this.guard, result.commit);
    if (result.outcome === 'humanEdited')
      log(
        'info',
        `auto-update of ${key}: ${result.author} changed ${result.path} on ${branch}; keeping their version`,
        { plan: key, branch },
      );
    const title = proposalTitle(config.cluster, key, proposal.version);
    const body = proposalBody({
      cluster: config.cluster,
      template: key,
      templateFile: file,
      childFile,
      childName: child.name,
      currentVersion: current,
      proposal,
      report: await previewOf(ctx, this.deps, doc, childFile),
      supersedes: supersedes && { version: supersedes.version, number: supersedes.pr.number },
      evidence,
    });
    const pr = await this.openOrRefresh(ctx, { template, current, version: proposal.version, branch, title, body });
    await this.guardProposal(ctx, pr, childFile);
    return pr;
  }

  /** The open PR of the branch gets the new title and body; without one, a PR is opened (and announced). */
  private async openOrRefresh(
    ctx: OpContext,
    p: { template: PlanView; current: string; version: string; branch: string; title: string; body: string },
  ): Promise<PullRequestView> {
    const { config, forge, log } = this.deps;
    const { template, version, branch, title, body } = p;
    const fields = { plan: template.name, branch, version };
    const existing = (await forge.pullRequestsFor(ctx, branch)).find((pr) => pr.state === 'open');
    if (existing) {
      const pr = await forge.updatePullRequest(ctx, existing.number, { title, body });
      log('info', `auto-update of ${template.name}: refreshed pull request #${pr.number} for Talos ${version}`, {
        ...fields,
        pr: pr.number,
      });
      return pr;
    }
    const pr = await forge.openPullRequest(ctx, {
      head: branch,
      base: config.baseBranch,
      title,
      body,
      draft: false,
      labels: proposalLabels(config.cluster, version),
    });
    log('info', `auto-update of ${template.name}: opened pull request #${pr.number} for Talos ${version}`, {
      ...fields,
      pr: pr.number,
    });
    this.deps.onProposalOpened?.(
      { name: template.name, uid: template.uid },
      { version, currentVersion: p.current, number: pr.number, url: pr.url },
    );
    return pr;
  }

  /** An open proposal that changes more than its child plan file is a draft until it does not. */
  private async guardProposal(ctx: OpContext, pr: PullRequestView, childFile: string): Promise<void> {
    const { forge, log } = this.deps;
    if (pr.state !== 'open') return;
    const seen = this.guarded.get(pr.number) ?? { noted: undefined, drafted: false };
    const fresh =
      pr.headSha === '' ? ((await forge.pullRequestsFor(ctx, pr.head)).find((p) => p.number === pr.number) ?? pr) : pr;
    const g = await guardPullRequest(ctx, this.guard, fresh, {
      own: [childFile],
      noted: seen.noted,
      consequence: 'turned this proposal into a draft until only its child plan file is changed',
    });
    if (g.foreign.length > 0) {
      log(
        'warn',
        `auto-update: #${pr.number} changes files outside its child plan (${g.foreign.slice(0, 5).join(', ')}${g.foreign.length > 5 ? ', …' : ''}): a draft until they are gone`,
        { pr: pr.number, branch: pr.head },
      );
      if (!fresh.draft) await forge.setDraft(ctx, pr.number, true);
      this.guarded.set(pr.number, { noted: g.noted, drafted: seen.drafted || !fresh.draft });
      return;
    }
    if (seen.drafted && fresh.draft) await forge.setDraft(ctx, pr.number, false);
    this.guarded.set(pr.number, { noted: undefined, drafted: false });
  }
}
