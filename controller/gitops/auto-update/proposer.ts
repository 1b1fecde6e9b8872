// The auto-update loop: for every template plan (target.autoUpdate.enabled), at each check time
// (first check at once, then checkInterval, or earlier when a pending release comes of age) read
// the releases, the lowest Talos version on the template's nodes, its child plans and its proposal
// PRs as the forge has them, let the pure core decide (core/auto-update), perform at most one
// action (propose, or supersede), and write status.autoUpdate. Deleting a template closes its open
// proposals with a comment; after the GitOps loop's first sync, a sweep closes those of templates
// deleted while no leader ran (neither the cluster nor Git has them).
//
// Event-driven: template and child plan events, node events and exact timers (WorkQueue addAfter)
// wake a template; a wake whose inputs did not change before the next check time does nothing.
// Restart-safe without memory: open, skipped (closed unmerged) and merged proposals are read back
// from the forge on every check, the branch writer finds an unchanged branch, the PR is found by branch.
//
// The proposal PRs on the forge are pull-requests.ts's, the child plan a proposal adds and its
// preview proposed-plan.ts's.
import { Annotation } from '../../../schemas/api.js';
import type { AutoUpdateStatus, PatchPlanSpec } from '../../../schemas/patchplan.js';
import semver from 'semver';
import { TEMPLATE_LABEL } from '../../core/auto-update/child-plan.js';
import { childPlanName } from '../../core/names.js';
import type { ImageSource } from '../../../schemas/target.js';
import { decideAutoUpdate, type ChildPlanFacts } from '../../core/auto-update/decide.js';
import { lowestVersion } from '../../core/auto-update/releases.js';
import { statusAfterCheck, statusAfterError } from '../../core/auto-update/status.js';
import { selectNodes } from '../../core/plan/selection.js';
import { sameValue } from '../../core/same-value.js';
import { durationMs } from '../../core/time.js';
import type { PlanView } from '../../kube/views.js';
import type { OpContext } from '../../runtime/context.js';
import { isOutcomeError, OutcomeKind } from '../../runtime/outcome.js';
import { WorkQueue, type PassResult } from '../../runtime/queue.js';
import { promotionGate, type PromotionGate, type PromotionGateInput } from '../promotion/gate.js';
import type { AutoUpdateDeps } from './deps.js';
import { clusterProposalPrefix, templateOfBranch, type ProposalPr } from './proposals.js';
import { ProposalPullRequests } from './pull-requests.js';

export interface AutoUpdater {
  /**
   * Closes the open proposals of this cluster whose template is neither a template in the cluster
   * nor a plan in `gitPlans` (the names in the commit the GitOps loop just synced).
   */
  sweep(gitPlans: readonly string[]): void;
  /** A new commit was loaded: templates with autoUpdate.promotion look at its reports now. */
  evidenceChanged(): void;
  stop(): Promise<void>;
  readonly queue: WorkQueue;
}

interface TemplateMemory {
  /** The inputs of the last completed check; a change means look again now. */
  fingerprint: string;
  nextWakeAt: number;
  failures: number;
}

interface CheckOutcome {
  status: AutoUpdateStatus;
  nextWakeAt: number;
  /** Failed checks in a row (the backoff). */
  failures: number;
}

/** An open proposal as the decision and status name it. */
const proposalRef = (open: ProposalPr | undefined): { version: string; url: string } | undefined =>
  open && { version: open.version, url: open.pr.url };

/** ms until the next check time when the template's inputs are those of the last check; undefined: check now. */
function waitForUnchanged(mem: TemplateMemory | undefined, fingerprint: string, now: number): number | undefined {
  return mem && mem.fingerprint === fingerprint && now < mem.nextWakeAt ? mem.nextWakeAt - now : undefined;
}

/** The template's checkInterval (1h when unset). */
const checkIntervalMs = (spec: PatchPlanSpec): number => durationMs(spec.target.autoUpdate?.checkInterval ?? '1h');

/** The sweep's queue key: no plan can have this name. */
const SWEEP_KEY = '<sweep>';
const isTemplate = (p: PlanView | undefined): boolean => p?.spec?.target.autoUpdate?.enabled === true;

/** Merged proposals whose child plan the GitOps loop has not applied yet: they hold new proposals back too. */
function mergedNotApplied(
  key: string,
  merged: readonly string[],
  current: string | undefined,
  children: readonly ChildPlanFacts[],
): ChildPlanFacts[] {
  if (current === undefined) return [];
  return merged
    .filter((v) => semver.gt(v, current) && !children.some((c) => c.version === v))
    .map((v) => ({ name: childPlanName(key, v), version: v, phase: undefined }));
}

/** The template's target.source (its default, ghcr, when the spec does not say). */
function installerSourceOf(template: PlanView): ImageSource {
  return template.spec?.target.source ?? 'ghcr';
}

export function startAutoUpdate(deps: AutoUpdateDeps, signal: AbortSignal): AutoUpdater {
  return new AutoUpdateProposer(deps, signal);
}

/**
 * The auto-update proposer of this leader, from its start to `stop`. Owns the queue of templates
 * (one check at a time), what each template's last check saw (to skip a wake whose inputs did not
 * change), the templates gone whose open proposals are still to close, and the plans the sweep keeps.
 */
class AutoUpdateProposer implements AutoUpdater {
  readonly queue: WorkQueue;
  private readonly memory = new Map<string, TemplateMemory>();
  private readonly prs: ProposalPullRequests;
  /** Templates deleted (or turned into plain plans) whose open proposals are still to close. */
  private readonly gone = new Set<string>();
  private sweepKeep: ReadonlySet<string> = new Set();

  constructor(
    private readonly deps: AutoUpdateDeps,
    signal: AbortSignal,
  ) {
    const { informers, clock, log } = deps;
    this.prs = new ProposalPullRequests(deps);
    this.queue = new WorkQueue({
      name: 'auto-update',
      // One at a time: the releases feed is read once per check and its ETag answers the others.
      concurrency: 1,
      clock,
      passTimeoutMs: 5 * 60_000,
      backoff: { initialMs: 2000, maxMs: 5 * 60_000 },
      onError: (key, err, retryIn) =>
        log(
          'warn',
          `auto-update of template ${key} failed${retryIn === undefined ? '' : `; retrying in ${Math.round(retryIn / 1000)} s`}`,
          {
            plan: key,
            error: err instanceof Error ? err.message : String(err),
          },
        ),
    });
    informers.patchPlans.onChange((key, view, old) => {
      if (isTemplate(old) && (!isTemplate(view) || view?.deleting === true)) this.gone.add(key);
      if (isTemplate(view) || isTemplate(old)) this.queue.add(key);
      const parent = view?.labels[TEMPLATE_LABEL] ?? old?.labels[TEMPLATE_LABEL];
      if (parent !== undefined) this.queue.add(parent);
    });
    informers.nodes.onChange(() => {
      for (const t of this.templates()) this.queue.add(t.name);
    });
    this.queue.start((key, ctx) => this.pass(key, ctx), signal);
    void informers.patchPlans.synced.then(() => {
      for (const t of this.templates()) this.queue.add(t.name);
    });
  }

  sweep(gitPlans: readonly string[]): void {
    this.sweepKeep = new Set(gitPlans);
    this.queue.add(SWEEP_KEY);
  }

  evidenceChanged(): void {
    for (const t of this.templates().filter((p) => p.spec?.target.autoUpdate?.promotion !== undefined)) {
      this.memory.delete(t.name);
      this.queue.add(t.name);
    }
  }

  stop(): Promise<void> {
    return this.queue.drain();
  }

  private templates(): PlanView[] {
    return this.deps.informers.patchPlans.list().filter(isTemplate);
  }

  private childrenOf(template: string): ChildPlanFacts[] {
    return this.deps.informers.patchPlans
      .list()
      .filter((p) => p.labels[TEMPLATE_LABEL] === template)
      .map((p) => ({ name: p.name, version: p.spec?.target.talosVersion ?? '', phase: p.status.phase }));
  }

  private async writeStatus(ctx: OpContext, key: string, next: AutoUpdateStatus): Promise<void> {
    const { informers, kube } = this.deps;
    const plan = informers.patchPlans.get(key);
    if (!plan || sameValue(plan.status.autoUpdate, next)) return;
    informers.patchPlans.observeWrite(await kube.writePlanStatus(ctx, plan, { ...plan.status, autoUpdate: next }));
  }

  /**
   * The promotion gate on the upstream evidence, an index older than the sequences in status refused.
   * Record first: status.autoUpdate.promotion.upstreamSequence is raised to what the evidence
   * verified before anything is done on it, so a crash cannot let an older (replayed) index count.
   */
  private async gateRecorded(ctx: OpContext, template: PlanView, input: PromotionGateInput): Promise<PromotionGate> {
    const key = template.name;
    const seen = template.status.autoUpdate?.promotion?.upstreamSequence ?? {};
    const promo = promotionGate(this.deps.evidence, input, seen);
    if (sameValue(seen, promo.upstreamSequence)) return promo;
    const prev = this.deps.informers.patchPlans.get(key)?.status.autoUpdate;
    await this.writeStatus(ctx, key, {
      ...prev,
      promotion: { ...(prev?.promotion ?? promo.outcome.status), upstreamSequence: promo.upstreamSequence },
    });
    this.deps.log(
      'info',
      `auto-update of ${key}: recorded upstream report index sequences ${Object.entries(promo.upstreamSequence)
        .map(([c, n]) => `${c}=${n}`)
        .join(', ')}`,
      { plan: key },
    );
    return promo;
  }

  /** Queues every template that has an open proposal but is neither in the cluster nor in Git: closeAll runs for it. */
  private async sweepPass(ctx: OpContext): Promise<undefined> {
    const { config, forge, log } = this.deps;
    const live = new Set([...this.templates().map((t) => t.name), ...this.sweepKeep]);
    for (const pr of await forge.pullRequestsWithPrefix(ctx, clusterProposalPrefix(config.cluster))) {
      const template = pr.state === 'open' ? templateOfBranch(config.cluster, pr.head) : undefined;
      if (template === undefined || live.has(template)) continue;
      log(
        'info',
        `auto-update: #${pr.number} proposes for template ${template}, which neither the cluster nor Git has: closing it`,
        { plan: template, pr: pr.number },
      );
      this.gone.add(template);
      this.queue.add(template);
    }
    return undefined;
  }

  private async check(
    ctx: OpContext,
    template: PlanView,
    current: string | undefined,
    children: ChildPlanFacts[],
  ): Promise<CheckOutcome> {
    const { clock, log } = this.deps;
    const key = template.name;
    const spec = template.spec?.target.autoUpdate;
    if (!spec) return { status: template.status.autoUpdate ?? {}, nextWakeAt: clock.now(), failures: 0 };
    const feed = await (await this.deps.releases()).list(ctx);
    const onForge = await this.prs.proposalsOnForge(ctx, key);
    const [first] = onForge.open;
    const now = clock.now();
    const stepwise = template.spec?.target.path === 'stepwise';
    const promo =
      spec.promotion &&
      (await this.gateRecorded(ctx, template, {
        spec: { ...spec, promotion: spec.promotion, stepwise },
        current,
        releases: feed.releases,
        now,
      }));
    const open = await this.prs.settleOpenProposal(ctx, first, promo);
    await this.prs.guardOpen(ctx, template, open);
    const decision = decideAutoUpdate({
      now,
      spec,
      installerSource: installerSourceOf(template),
      stepwise,
      currentVersion: current,
      releases: feed.releases,
      skippedVersions: onForge.skipped,
      children: [...children, ...mergedNotApplied(key, onForge.merged, current, children)],
      openProposal: proposalRef(open),
      promotionGate: promo?.gate,
    });
    const a = decision.action;
    const proposal =
      a.type !== 'none' && current !== undefined
        ? await this.prs.act(ctx, template, { current, action: a, open, promo })
        : proposalRef(open);
    log(a.type === 'none' ? 'debug' : 'info', `auto-update of ${key}: ${decision.message}`, {
      plan: key,
      reason: decision.reason,
      notModified: feed.notModified,
    });
    const status = statusAfterCheck(this.deps.informers.patchPlans.get(key)?.status.autoUpdate, decision, {
      now,
      skippedVersions: onForge.skipped,
      proposal,
      promotion: promo?.outcome.status,
    });
    return { status, nextWakeAt: decision.nextWakeAt, failures: 0 };
  }

  /** A failed check: lastError, and the next try (a rate limit's reset; backoff up to checkInterval; Stalled: checkInterval). */
  private failedCheck(key: string, err: unknown, failures: number, intervalMs: number): CheckOutcome {
    const { config, informers, clock, log } = this.deps;
    const waitMs =
      isOutcomeError(err) && err.kind === OutcomeKind.Waiting && err.retryAfterMs !== undefined
        ? err.retryAfterMs
        : isOutcomeError(err) && err.kind === OutcomeKind.Stalled
          ? intervalMs
          : Math.min(intervalMs, (config.retryInitialMs ?? 5000) * 2 ** Math.min(failures - 1, 20));
    const at = clock.now();
    const reason = isOutcomeError(err) ? err.reason : 'Error';
    const message = err instanceof Error ? err.message : String(err);
    log('warn', `auto-update of ${key}: check failed (${reason}); next try in ${Math.round(waitMs / 1000)} s`, {
      plan: key,
      reason,
      error: message,
    });
    return {
      status: statusAfterError(informers.patchPlans.get(key)?.status.autoUpdate, { reason, message }, at, at + waitMs),
      nextWakeAt: at + waitMs,
      failures,
    };
  }

  /** No template (any more) under this name: its open proposals are closed if it went away. */
  private async forget(ctx: OpContext, key: string): Promise<undefined> {
    if (this.gone.has(key)) {
      await this.prs.closeAll(ctx, key);
      this.gone.delete(key);
    }
    this.memory.delete(key);
    return undefined;
  }

  private async pass(key: string, ctx: OpContext): Promise<PassResult | undefined> {
    if (key === SWEEP_KEY) return this.sweepPass(ctx);
    const { config, informers, clock } = this.deps;
    const template = informers.patchPlans.get(key);
    if (!template || template.deleting || !isTemplate(template) || !template.spec) return this.forget(ctx, key);
    this.gone.delete(key);
    const spec = template.spec;
    const nodes = informers.nodes.list();
    const selected = selectNodes(spec, nodes, config.ownNode);
    const current = lowestVersion(nodes.filter((n) => selected.groupOf.has(n.name)).map((n) => n.talosVersion));
    const children = this.childrenOf(key);
    const fingerprint = JSON.stringify([
      template.generation,
      template.annotations[Annotation.ReconcileNow],
      current,
      children,
    ]);
    const now = clock.now();
    const mem = this.memory.get(key);
    const unchangedMs = waitForUnchanged(mem, fingerprint, now);
    if (unchangedMs !== undefined) return { requeueAfterMs: unchangedMs };
    let outcome: CheckOutcome;
    try {
      outcome = await this.check(ctx, template, current, children);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      outcome = this.failedCheck(key, err, (mem?.failures ?? 0) + 1, checkIntervalMs(spec));
    }
    // A failed status write (a Conflict with the plan reconciler's write) throws: the queue retries
    // the whole check, which is safe (a proposal made is found open on the forge next time).
    await this.writeStatus(ctx, key, outcome.status);
    this.memory.set(key, { fingerprint, nextWakeAt: outcome.nextWakeAt, failures: outcome.failures });
    return { requeueAfterMs: Math.max(0, outcome.nextWakeAt - clock.now()) };
  }
}
