// Promotion across clusters (autoUpdate.promotion): which releases the upstream stages prove, when
// the held-back ones become eligible, what the template's status says, and what happens to an open
// proposal when upstream changes its mind. Pure: reports and time are arguments.
import semver from 'semver';
import type { z } from 'zod';
import { MAX_REJECTED_REPORTS, type PromotionStageStatus, type PromotionStatus } from '../../../schemas/patchplan.js';
import type { promotionSpec } from '../../../schemas/target.js';
import { durationMs, iso } from '../time.js';
import { refusedVerdict, stageVerdict, type StageVerdict } from './stage.js';
import type { RefusedCluster, RejectedReport, UpstreamReport } from './types.js';

export type PromotionSpec = z.output<typeof promotionSpec>;

export interface VersionVerdict {
  version: string;
  stages: StageVerdict[];
  /** epoch ms when every stage lets the version through; undefined: not until Git changes (a stage is missing, failed, rolled back). */
  eligibleAt: number | undefined;
}

export interface PromotionInput {
  now: number;
  spec: PromotionSpec;
  /** The versions auto-update could propose (allowed steps above the current version), any order. */
  versions: readonly string[];
  reports: readonly UpstreamReport[];
  rejected: readonly RejectedReport[];
  /** Upstream clusters whose evidence is refused as a whole (their signed report index does not hold). */
  refused?: readonly RefusedCluster[] | undefined;
  /** The plans-repository commit the reports come from. */
  commit: string | undefined;
}

export interface PromotionOutcome {
  /** Per version: when promotion lets it through (undefined: not until Git changes). Newest first. */
  verdicts: VersionVerdict[];
  status: PromotionStatus;
}

const PromotionReason = {
  WaitingForPromotion: 'WaitingForPromotion',
  Promoted: 'Promoted',
  NothingToPromote: 'NothingToPromote',
} as const;

const HOLDING = new Set([
  'NotRolledOut',
  'InProgress',
  'Failed',
  'SoakInterrupted',
  'LaterFailure',
  'RolledBack',
  'EvidenceRefused',
]);

export function versionVerdict(
  input: Pick<PromotionInput, 'now' | 'spec' | 'reports' | 'refused'>,
  version: string,
): VersionVerdict {
  const soakMs = durationMs(input.spec.soak);
  const stages = input.spec.after.map((stage) => {
    const refused = input.refused?.find((r) => r.cluster === stage.cluster);
    return refused
      ? refusedVerdict(stage, refused.reason)
      : stageVerdict(stage, input.reports, { version, soakMs, now: input.now });
  });
  const held = stages.some((s) => HOLDING.has(s.state));
  const eligibleAt = held ? undefined : Math.max(...stages.map((s) => s.eligibleAt ?? input.now));
  return { version, stages, eligibleAt };
}

function stageStatus(v: StageVerdict): PromotionStageStatus {
  const s: PromotionStageStatus = { cluster: v.stage.cluster, state: v.state, message: v.message };
  const selector =
    v.stage.plan !== undefined
      ? `plan ${v.stage.plan}`
      : v.stage.template !== undefined
        ? `template ${v.stage.template}`
        : undefined;
  if (selector !== undefined) s.selector = selector;
  const evidence = v.evidence ?? v.culprit;
  if (evidence) s.report = evidence.file;
  if (v.evidence?.completionTime !== undefined) s.completionTime = iso(v.evidence.completionTime);
  if (v.eligibleAt !== undefined) s.eligibleTime = iso(v.eligibleAt);
  return s;
}

/**
 * Every candidate version judged; the status shows the newest one: waiting (with the stages and,
 * when only the soak holds it, the exact eligible time) or promoted.
 */
export function decidePromotion(input: PromotionInput): PromotionOutcome {
  const versions = [...new Set(input.versions.filter((v) => semver.valid(v) !== null))].sort(semver.rcompare);
  const verdicts = versions.map((v) => versionVerdict(input, v));
  const newest = verdicts[0];
  const status: PromotionStatus = { reason: PromotionReason.NothingToPromote };
  if (input.commit !== undefined) status.commit = input.commit;
  if (newest) {
    const promoted = newest.eligibleAt !== undefined && newest.eligibleAt <= input.now;
    status.reason = promoted ? PromotionReason.Promoted : PromotionReason.WaitingForPromotion;
    status.version = newest.version;
    if (newest.eligibleAt !== undefined) status.eligibleTime = iso(newest.eligibleAt);
    status.stages = newest.stages.map(stageStatus);
  }
  if (input.rejected.length > 0)
    status.rejectedReports = input.rejected
      .slice(0, MAX_REJECTED_REPORTS)
      .map((r) => ({ file: r.file, reason: r.reason }));
  if (input.rejected.length > MAX_REJECTED_REPORTS)
    status.moreRejectedReports = input.rejected.length - MAX_REJECTED_REPORTS;
  return { verdicts, status };
}

/** What an open proposal of `version` needs after upstream changed: nothing, a block (comment + title mark), an unblock, or closing. */
export type ProposalFate =
  | { type: 'keep' }
  | { type: 'block'; because: StageVerdict }
  | { type: 'unblock' }
  | { type: 'close'; because: StageVerdict };

export function proposalFate(verdict: VersionVerdict, blocked: boolean): ProposalFate {
  const rolledBack = verdict.stages.find((s) => s.state === 'RolledBack');
  if (rolledBack) return { type: 'close', because: rolledBack };
  const failing = verdict.stages.find(
    (s) =>
      s.state === 'LaterFailure' ||
      s.state === 'Failed' ||
      s.state === 'SoakInterrupted' ||
      s.state === 'EvidenceRefused',
  );
  if (failing) return blocked ? { type: 'keep' } : { type: 'block', because: failing };
  return blocked && verdict.eligibleAt !== undefined ? { type: 'unblock' } : { type: 'keep' };
}
