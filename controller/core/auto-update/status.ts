// status.autoUpdate of a template plan from a decision (decide.ts) or a failed check. Pure.
import type { AutoUpdateStatus, PromotionStatus } from '../../../schemas/patchplan.js';
import { iso } from '../time.js';
import type { AutoUpdateDecision } from './decide.js';

export interface CheckFacts {
  /** epoch ms of the check. */
  now: number;
  skippedVersions: readonly string[];
  /** The proposal PR the action produced (propose/supersede), or the open one. */
  proposal?: { version: string; url: string } | undefined;
  /** status.autoUpdate.promotion of a template with autoUpdate.promotion (removed when it has none). */
  promotion?: PromotionStatus | undefined;
}

/** After a successful check: every field from the decision, the last error cleared. */
export function statusAfterCheck(
  prev: AutoUpdateStatus | undefined,
  d: AutoUpdateDecision,
  facts: CheckFacts,
): AutoUpdateStatus {
  const s: AutoUpdateStatus = { ...prev, lastCheckTime: iso(facts.now), nextCheckTime: iso(d.nextWakeAt) };
  for (const k of [
    'currentVersion',
    'latestVersion',
    'pendingVersion',
    'pendingEligibleTime',
    'pendingHeldBy',
    'blockedBy',
    'lastError',
    'promotion',
  ] as const)
    delete s[k];
  if (facts.promotion) s.promotion = facts.promotion;
  if (d.currentVersion !== undefined) s.currentVersion = d.currentVersion;
  if (d.latestVersion !== undefined) s.latestVersion = d.latestVersion;
  if (d.pending) {
    s.pendingVersion = d.pending.version;
    s.pendingEligibleTime = iso(d.pending.eligibleAt);
    s.pendingHeldBy = d.pending.heldBy === 'promotion' ? 'Promotion' : 'MinReleaseAge';
  }
  if (d.blockedBy)
    s.blockedBy = {
      name: d.blockedBy.name,
      version: d.blockedBy.version,
      ...(d.blockedBy.phase === undefined ? {} : { phase: d.blockedBy.phase }),
    };
  if (facts.proposal) {
    s.lastProposedVersion = facts.proposal.version;
    s.lastProposalURL = facts.proposal.url;
  }
  if (facts.skippedVersions.length > 0) s.skippedVersions = [...new Set(facts.skippedVersions)];
  return s;
}

/** After a failed check (rate limit, network, auth): the rest of the status stays as the last success left it. */
export function statusAfterError(
  prev: AutoUpdateStatus | undefined,
  err: { reason: string; message: string },
  now: number,
  retryAt: number,
): AutoUpdateStatus {
  return {
    ...prev,
    lastError: { reason: err.reason, message: err.message, time: iso(now) },
    nextCheckTime: iso(retryAt),
  };
}
