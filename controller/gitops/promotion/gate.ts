// The promotion gate of one auto-update template check: the upstream evidence of the loaded commit,
// judged by the pure core for every version the template could propose. A template whose evidence
// is not loaded yet waits (transient) rather than deciding on nothing.
import type { AutoUpdateSpec } from '../../core/auto-update/decide.js';
import { allowedStep } from '../../core/auto-update/decide.js';
import { stableReleases, type Release } from '../../core/auto-update/releases.js';
import { decidePromotion, type PromotionOutcome, type PromotionSpec } from '../../core/promotion/decide.js';
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';
import { evidenceSection } from './body.js';
import type { UpstreamEvidence } from './reports.js';

/**
 * Reads the evidence of the upstream clusters named (from the last loaded commit), refusing an index
 * older than `seen` (cluster → highest sequence already seen); undefined while none is loaded.
 */
export type EvidenceSource = (
  clusters: ReadonlySet<string>,
  seen: Readonly<Record<string, number>>,
) => UpstreamEvidence | undefined;

export interface PromotionGate {
  soak: string;
  outcome: PromotionOutcome;
  evidence: UpstreamEvidence;
  /** version → when promotion lets it through (undefined: held until Git changes). */
  gate: Map<string, number | undefined>;
  /**
   * cluster → the highest report index sequence seen, this evidence included (also in
   * outcome.status.upstreamSequence): to be in status before anything is done on this evidence.
   */
  upstreamSequence: Record<string, number>;
}

/** `seen` raised by the sequences of verified indexes (never lowered: a refused older index offers none). */
function raisedSequences(
  seen: Readonly<Record<string, number>>,
  offered: Readonly<Record<string, number>>,
): Record<string, number> {
  const out: Record<string, number> = { ...seen };
  for (const [cluster, n] of Object.entries(offered)) out[cluster] = Math.max(n, out[cluster] ?? 0);
  return out;
}

const stageClusters = (p: PromotionSpec): Set<string> => new Set(p.after.map((s) => s.cluster));

/** What the gate judges: the template's spec, the lowest Talos version on its nodes, the releases, and when. */
export interface PromotionGateInput {
  spec: AutoUpdateSpec & { promotion: PromotionSpec; stepwise?: boolean | undefined };
  current: string | undefined;
  releases: readonly Release[];
  now: number;
}

export function promotionGate(
  source: EvidenceSource | undefined,
  { spec, current, releases, now }: PromotionGateInput,
  seen: Readonly<Record<string, number>> = {},
): PromotionGate {
  if (!source) {
    throw new OutcomeError({
      kind: OutcomeKind.Stalled,
      reason: 'PromotionNotConfigured',
      message:
        'autoUpdate.promotion needs the upstream clusters\' public keys: start the controller with --promotion-keys-dir (docs/auto-update-and-promotion.md "Promoting across clusters")',
    });
  }
  const evidence = source(stageClusters(spec.promotion), seen);
  if (!evidence)
    throw new OutcomeError({
      kind: OutcomeKind.Transient,
      reason: 'EvidenceNotLoaded',
      message: 'the upstream reports are not loaded from Git yet (first poll of the plans repository)',
    });
  const versions =
    current === undefined
      ? []
      : stableReleases(releases)
          .map((r) => r.tagName)
          .filter((v) => allowedStep(current, v, spec) !== undefined);
  const outcome = decidePromotion({
    now,
    spec: spec.promotion,
    versions,
    reports: evidence.reports,
    rejected: evidence.rejected,
    refused: evidence.refused,
    commit: evidence.commit,
  });
  const upstreamSequence = raisedSequences(seen, evidence.sequences);
  if (Object.keys(upstreamSequence).length > 0) outcome.status.upstreamSequence = upstreamSequence;
  return {
    soak: spec.promotion.soak,
    outcome,
    evidence,
    gate: new Map(outcome.verdicts.map((v) => [v.version, v.eligibleAt])),
    upstreamSequence,
  };
}

/** The evidence section of a proposal for `version` (Markdown lines), when the gate judged it. */
export function evidenceOf(
  promo: PromotionGate,
  version: string,
  blobUrlBase: string | undefined,
): string[] | undefined {
  const verdict = promo.outcome.verdicts.find((v) => v.version === version);
  return verdict && evidenceSection(verdict, promo.soak, promo.evidence.commit, blobUrlBase);
}
