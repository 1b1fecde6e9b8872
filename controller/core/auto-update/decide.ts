// The auto-update decision of a template plan (target.autoUpdate): from the upstream releases, the
// lowest Talos version on the template's selected nodes, the versions people skipped (a proposal PR
// closed without merge), the child plans and the open proposal, decide what to propose and when to
// look again. Pure: time is an argument.
//
// Rules (issue 11):
// - stable releases only (releases.ts), at least minReleaseAge old; a younger one is `pending` with
//   the time it becomes eligible;
// - allow patch: same major.minor as the current version; allow minor: also the next minor, never
//   one further (1.13.x may go to 1.14.y, never to 1.15.z);
// - the proposal is the highest eligible version above the current one, minus skipped versions,
//   versions a child plan already exists for and, for a ghcr template, versions ghcr has no installer for;
// - no new proposal (and no superseding) while a child plan is not Completed (Failed blocks too);
// - a newer eligible version than the open proposal supersedes it;
// - the next wake: the next check, or the first time a pending version becomes eligible, whichever first.
import semver from 'semver';
import type { z } from 'zod';
import type { autoUpdateSpec, ImageSource } from '../../../schemas/target.js';
import { ghcrPublishesInstaller } from '../../../schemas/ghcr-installer.js';
import { durationMs, iso } from '../time.js';
import { stableReleases, type Release } from './releases.js';

export type AutoUpdateSpec = z.output<typeof autoUpdateSpec>;

export interface ChildPlanFacts {
  name: string;
  /** target.talosVersion of the child. */
  version: string;
  phase: string | undefined;
}

interface OpenProposal {
  version: string;
  url?: string | undefined;
}

export interface AutoUpdateInput {
  /** epoch ms */
  now: number;
  spec: AutoUpdateSpec;
  /** The template's target.source: a ghcr template is never proposed a release ghcr has no installer for (1.14+). */
  installerSource: ImageSource;
  /** The template's target.path is stepwise: with allow minor, the newest release of any newer minor is proposed (its child plan walks the path). */
  stepwise?: boolean | undefined;
  /** Lowest Talos version across the template's selected nodes (undefined: no node reports one). */
  currentVersion: string | undefined;
  releases: readonly Release[];
  /** When `releases` was fetched (epoch ms; default now): the next check is checkInterval after it. */
  checkedAt?: number | undefined;
  /** Versions whose proposal was closed without merge. */
  skippedVersions: readonly string[];
  /** Child plans of this template (from merged proposals). */
  children: readonly ChildPlanFacts[];
  openProposal?: OpenProposal | undefined;
  /**
   * With autoUpdate.promotion: per version, when the upstream stages let it through (epoch ms;
   * core/promotion). A version missing or undefined is held back until Git changes.
   */
  promotionGate?: ReadonlyMap<string, number | undefined> | undefined;
}

export type Step = 'patch' | 'minor';

export interface Proposal {
  version: string;
  release: Release;
  step: Step;
}

interface Pending {
  version: string;
  /** epoch ms */
  eligibleAt: number;
  /** What holds it until then: its age (minReleaseAge) or the upstream soak (promotion). */
  heldBy: 'age' | 'promotion';
}

export type AutoUpdateAction =
  /** Open a proposal PR for `proposal`. */
  | { type: 'propose'; proposal: Proposal }
  /** Replace the open proposal (branch, file, title, body) with the newer `proposal`. */
  | { type: 'supersede'; proposal: Proposal; supersedes: OpenProposal }
  /** Nothing to do now. */
  | { type: 'none' };

const AutoUpdateReason = {
  Proposed: 'Proposed',
  Superseded: 'Superseded',
  ProposalOpen: 'ProposalOpen',
  ChildNotCompleted: 'ChildNotCompleted',
  Pending: 'ReleaseTooYoung',
  WaitingForPromotion: 'WaitingForPromotion',
  UpToDate: 'UpToDate',
  NoCurrentVersion: 'NoCurrentVersion',
} as const;
type AutoUpdateReason = (typeof AutoUpdateReason)[keyof typeof AutoUpdateReason];

export interface AutoUpdateDecision {
  action: AutoUpdateAction;
  reason: AutoUpdateReason;
  /** One sentence for status and events. */
  message: string;
  currentVersion: string | undefined;
  /** Newest stable upstream release (any age, any step). */
  latestVersion: string | undefined;
  /** The highest allowed version still younger than minReleaseAge, above the proposal. */
  pending: Pending | undefined;
  /** The child plan that holds new proposals back. */
  blockedBy: ChildPlanFacts | undefined;
  /** epoch ms: the next check, or an earlier eligibility time. */
  nextWakeAt: number;
  nextCheckAt: number;
}

/** How far a template may step: autoUpdate.allow, and whether its child plans walk a path (target.path: stepwise). */
export interface StepPolicy {
  allow: AutoUpdateSpec['allow'];
  /** With allow minor: any newer minor of the major, as the child plan walks every minor in between. */
  stepwise?: boolean | undefined;
}

/** Whether `version` is a step the policy allows from `current`. */
export function allowedStep(current: string, version: string, policy: StepPolicy): Step | undefined {
  const c = semver.parse(current);
  const v = semver.parse(version);
  if (!c || !v || v.major !== c.major || !semver.gt(v, c)) return undefined;
  if (v.minor === c.minor) return 'patch';
  if (policy.allow !== 'minor') return undefined;
  return v.minor === c.minor + 1 || policy.stepwise === true ? 'minor' : undefined;
}

const stepPolicy = (input: Pick<AutoUpdateInput, 'spec' | 'stepwise'>): StepPolicy => ({
  allow: input.spec.allow,
  stepwise: input.stepwise,
});

type DecisionBase = Omit<AutoUpdateDecision, 'action' | 'reason' | 'message'>;

interface Candidate {
  release: Release;
  step: Step;
  /** epoch ms: publishedAt + minReleaseAge, or later when the upstream soak ends later. */
  eligibleAt: number;
  heldBy: Pending['heldBy'];
}

const NONE = { type: 'none' } as const;

function blockedMessage(child: ChildPlanFacts): string {
  const failedHint = child.phase === 'Failed' ? ' (it failed: fix and retry it, or delete its file)' : '';
  return `child plan ${child.name} (${child.version}) is ${child.phase ?? 'not started'}, not Completed: no new proposal until it completes${failedHint}`;
}

/** Whether the template's installer source has an installer for `version` (ghcr stops at 1.13). */
export function installerPublished(input: Pick<AutoUpdateInput, 'installerSource'>, version: string): boolean {
  return input.installerSource !== 'ghcr' || ghcrPublishesInstaller(version);
}

/** The newest allowed release a ghcr template cannot be proposed, said once in the up-to-date message. */
function ghcrNote(input: AutoUpdateInput, stable: readonly Release[], current: string): string {
  const blocked = stable.find(
    (r) => allowedStep(current, r.tagName, stepPolicy(input)) !== undefined && !installerPublished(input, r.tagName),
  );
  return blocked
    ? `; ${blocked.tagName} is not proposed: ghcr.io/siderolabs/installer is not published from Talos 1.14, set target.source: factory with target.installer to follow it`
    : '';
}

/** Allowed steps from `current`, minus skipped versions and versions a child plan exists for; newest first. */
function candidatesFrom(input: AutoUpdateInput, stable: readonly Release[], current: string): Candidate[] {
  const { now, spec } = input;
  const excluded = new Set(
    [...input.skippedVersions, ...input.children.map((c) => c.version)]
      .filter((v) => semver.valid(v))
      .map((v) => semver.clean(v)),
  );
  const minAge = durationMs(spec.minReleaseAge);
  const gate = input.promotionGate;
  return stable.flatMap((release): Candidate[] => {
    const step = allowedStep(current, release.tagName, stepPolicy(input));
    if (
      step === undefined ||
      excluded.has(semver.clean(release.tagName)) ||
      !installerPublished(input, release.tagName)
    )
      return [];
    const aged = (release.publishedAt ?? now) + minAge;
    if (!gate) return [{ release, step, eligibleAt: aged, heldBy: 'age' }];
    const promoted = gate.get(release.tagName);
    if (promoted === undefined) return [];
    return [{ release, step, eligibleAt: Math.max(aged, promoted), heldBy: promoted > aged ? 'promotion' : 'age' }];
  });
}

/** What either outcome builds on: the decision so far, the current version, and what is said of the pending version ('' for none). */
interface DecisionSoFar {
  out: DecisionBase;
  current: string;
  pendingNote: string;
}

/** Nothing eligible yet: an open proposal stays, else we wait for a young release or are up to date. */
function decideWithoutEligible(
  { out, current, pendingNote }: DecisionSoFar,
  input: AutoUpdateInput,
  stable: readonly Release[],
  held: string | undefined,
): AutoUpdateDecision {
  const open = input.openProposal;
  if (open)
    return {
      ...out,
      action: NONE,
      reason: AutoUpdateReason.ProposalOpen,
      message: `proposal for ${open.version} is open${pendingNote}`,
    };
  if (out.pending?.heldBy === 'promotion' || (!out.pending && held !== undefined)) {
    const what = out.pending?.heldBy === 'promotion' ? out.pending.version : held;
    return {
      ...out,
      action: NONE,
      reason: AutoUpdateReason.WaitingForPromotion,
      message: `nothing to propose yet from ${current}: ${what ?? 'a newer release'} is not yet promoted by the upstream stages (status.autoUpdate.promotion says what each waits for)${pendingNote}`,
    };
  }
  return out.pending
    ? {
        ...out,
        action: NONE,
        reason: AutoUpdateReason.Pending,
        message: `nothing to propose yet from ${current}${pendingNote}`,
      }
    : {
        ...out,
        action: NONE,
        reason: AutoUpdateReason.UpToDate,
        message: `${current} is the newest release allowed (allow: ${input.spec.allow})${stable[0] ? `; latest upstream ${stable[0].tagName}` : ''}${ghcrNote(input, stable, current)}`,
      };
}

/** An eligible version exists: propose it, supersede an older open proposal with it, or leave a newer-or-equal one open. */
function decideWithEligible(
  { out, current, pendingNote }: DecisionSoFar,
  best: Candidate,
  open: OpenProposal | undefined,
): AutoUpdateDecision {
  const proposal: Proposal = { version: best.release.tagName, release: best.release, step: best.step };
  if (open && semver.valid(open.version) && !semver.gt(proposal.version, open.version)) {
    return {
      ...out,
      action: NONE,
      reason: AutoUpdateReason.ProposalOpen,
      message: `proposal for ${open.version} is open${pendingNote}`,
    };
  }
  if (open) {
    return {
      ...out,
      action: { type: 'supersede', proposal, supersedes: open },
      reason: AutoUpdateReason.Superseded,
      message: `${proposal.version} supersedes the open proposal for ${open.version}${pendingNote}`,
    };
  }
  return {
    ...out,
    action: { type: 'propose', proposal },
    reason: AutoUpdateReason.Proposed,
    message: `proposing ${proposal.version} (${proposal.step} step from ${current})${pendingNote}`,
  };
}

export function decideAutoUpdate(input: AutoUpdateInput): AutoUpdateDecision {
  const { now, spec } = input;
  const stable = stableReleases(input.releases);
  const nextCheckAt = (input.checkedAt ?? now) + durationMs(spec.checkInterval);
  const base: DecisionBase = {
    currentVersion: input.currentVersion,
    latestVersion: stable[0]?.tagName,
    pending: undefined,
    blockedBy: undefined,
    nextWakeAt: nextCheckAt,
    nextCheckAt,
  };
  const current = input.currentVersion;
  if (current === undefined || semver.valid(current) === null) {
    return {
      ...base,
      action: NONE,
      reason: AutoUpdateReason.NoCurrentVersion,
      message: 'no selected node reports a Talos version (osImage "Talos (vX.Y.Z)"): nothing to compare releases with',
    };
  }
  const blockedBy = input.children.find((c) => c.phase !== 'Completed');
  if (blockedBy)
    return {
      ...base,
      blockedBy,
      action: NONE,
      reason: AutoUpdateReason.ChildNotCompleted,
      message: blockedMessage(blockedBy),
    };
  const candidates = candidatesFrom(input, stable, current);
  const best = candidates.find((c) => c.eligibleAt <= now);
  // Younger versions above the best eligible one: each changes the proposal when it comes of age.
  const younger = candidates.filter(
    (c) => c.eligibleAt > now && (best === undefined || semver.gt(c.release.tagName, best.release.tagName)),
  );
  const pending = younger[0] && {
    version: younger[0].release.tagName,
    eligibleAt: younger[0].eligibleAt,
    heldBy: younger[0].heldBy,
  };
  const nextWakeAt = Math.min(nextCheckAt, ...younger.map((c) => c.eligibleAt));
  const out: DecisionBase = { ...base, pending, nextWakeAt };
  const pendingNote = !pending
    ? ''
    : pending.heldBy === 'age'
      ? `; ${pending.version} is younger than minReleaseAge ${spec.minReleaseAge} until ${iso(pending.eligibleAt)}`
      : `; ${pending.version} soaks upstream until ${iso(pending.eligibleAt)}`;
  // The newest allowed release the promotion gate holds back until Git changes (no time to wake at).
  const held =
    input.promotionGate &&
    stable.find(
      (r) =>
        allowedStep(current, r.tagName, stepPolicy(input)) !== undefined &&
        input.promotionGate?.get(r.tagName) === undefined,
    )?.tagName;
  const soFar: DecisionSoFar = { out, current, pendingNote };
  return best ? decideWithEligible(soFar, best, input.openProposal) : decideWithoutEligible(soFar, input, stable, held);
}
