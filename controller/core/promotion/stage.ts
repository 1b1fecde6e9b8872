// Where one version stands on one upstream stage, from that stage's reports. Pure: time is an argument.
//
// Rules (issue 20), for version X on stage S (the stage's reports: its cluster, narrowed to one
// plan or to one auto-update template's children):
// - evidence = the latest report targeting X that is Completed with no failed node;
// - a report started after the evidence completed is "later": one targeting a lower version is a
//   rollback (X is never promoted from that evidence); one that failed (phase Failed or a failed
//   node) blocks X until a report started after it completes cleanly; one targeting another version
//   started before the soak ended interrupted the soak (X did not run the whole soak there);
// - otherwise X is eligible once soak has passed since the evidence completed.
import semver from 'semver';
import type { PromotionStageState } from '../../../schemas/patchplan.js';
import { childPlanName } from '../names.js';
import { iso } from '../time.js';
import type { UpstreamReport } from './types.js';

export interface Stage {
  cluster: string;
  template?: string | undefined;
  plan?: string | undefined;
}

export interface StageVerdict {
  stage: Stage;
  state: PromotionStageState;
  /** The completed report of X, when there is one. */
  evidence: UpstreamReport | undefined;
  /** The report that fails, rolls back or interrupts (LaterFailure, RolledBack, SoakInterrupted, Failed). */
  culprit: UpstreamReport | undefined;
  /** epoch ms: evidence completion + soak (Eligible, Soaking). */
  eligibleAt: number | undefined;
  message: string;
}

export const stageName = (s: Stage): string =>
  `${s.cluster}${s.plan !== undefined ? `/plan ${s.plan}` : ''}${s.template !== undefined ? `/template ${s.template}` : ''}`;

const hasFailure = (r: UpstreamReport): boolean => r.phase === 'Failed' || r.nodes.failed > 0;
const isClean = (r: UpstreamReport): boolean =>
  r.phase === 'Completed' && r.nodes.failed === 0 && r.completionTime !== undefined;
const sameVersion = (a: string | undefined, b: string): boolean =>
  a !== undefined && semver.valid(a) !== null && semver.eq(a, b);

/** The reports of one stage: its cluster, and the plan or the template's child plan when named. */
export function reportsOfStage(stage: Stage, reports: readonly UpstreamReport[]): UpstreamReport[] {
  return reports.filter((r) => {
    if (r.cluster !== stage.cluster) return false;
    if (stage.plan !== undefined && r.plan !== stage.plan) return false;
    if (
      stage.template !== undefined &&
      (r.talosVersion === undefined || r.plan !== childPlanName(stage.template, r.talosVersion))
    )
      return false;
    return true;
  });
}

function verdict(
  stage: Stage,
  state: PromotionStageState,
  message: string,
  rest: Partial<Pick<StageVerdict, 'evidence' | 'culprit' | 'eligibleAt'>> = {},
): StageVerdict {
  return { stage, state, evidence: rest.evidence, culprit: rest.culprit, eligibleAt: rest.eligibleAt, message };
}

/** The stage's cluster's evidence is refused as a whole (its signed report index does not hold): it proves nothing. */
export function refusedVerdict(stage: Stage, reason: string): StageVerdict {
  return verdict(stage, 'EvidenceRefused', `${stageName(stage)}: evidence refused: ${reason}`);
}

/** The first failure among `later` not followed by a clean rollout that started after it. */
function openFailure(later: readonly UpstreamReport[]): UpstreamReport | undefined {
  const failed = later.filter(hasFailure);
  return failed.find((f) => !later.some((r) => isClean(r) && (r.startTime ?? 0) > (f.startTime ?? 0)));
}

/** No clean rollout of the version on the stage: none at all, the last one failed, or it still runs. */
function withoutEvidence(stage: Stage, last: UpstreamReport | undefined, version: string): StageVerdict {
  const name = stageName(stage);
  if (!last)
    return verdict(
      stage,
      'NotRolledOut',
      `${name} has no rollout report of ${version} in Git (a report counts once its pull request is merged)`,
    );
  if (hasFailure(last))
    return verdict(
      stage,
      'Failed',
      `${name}: rollout of ${version} (${last.file}) failed: ${last.failures[0] ?? last.phase ?? 'failed nodes'}`,
      { culprit: last },
    );
  return verdict(
    stage,
    'InProgress',
    `${name}: rollout of ${version} (${last.file}) is ${last.phase ?? 'not started'}, not Completed`,
    { culprit: last },
  );
}

/** The version a stage is asked about, how long it must soak there after a clean rollout (spec.soak), and when. */
export interface SoakCheck {
  version: string;
  soakMs: number;
  now: number;
}

export function stageVerdict(
  stage: Stage,
  all: readonly UpstreamReport[],
  { version, soakMs, now }: SoakCheck,
): StageVerdict {
  const name = stageName(stage);
  const reports = reportsOfStage(stage, all).sort((a, b) => (a.startTime ?? 0) - (b.startTime ?? 0));
  const ofVersion = reports.filter((r) => sameVersion(r.talosVersion, version));
  const evidence = ofVersion.filter(isClean).at(-1);
  if (!evidence) return withoutEvidence(stage, ofVersion.at(-1), version);
  const done = evidence.completionTime ?? 0;
  const eligibleAt = done + soakMs;
  const later = reports.filter((r) => r !== evidence && (r.startTime ?? 0) > done);
  const rollback = later.find(
    (r) => r.talosVersion !== undefined && semver.valid(r.talosVersion) !== null && semver.lt(r.talosVersion, version),
  );
  if (rollback)
    return verdict(
      stage,
      'RolledBack',
      `${name} rolled back from ${version} to ${rollback.talosVersion ?? '?'} (${rollback.file})`,
      { evidence, culprit: rollback },
    );
  const failure = openFailure(later);
  if (failure)
    return verdict(
      stage,
      'LaterFailure',
      `${name}: a later rollout (${failure.plan}, ${failure.talosVersion ?? 'no Talos target'}, ${failure.file}) failed after ${version} completed: ${failure.failures[0] ?? failure.phase ?? 'failed nodes'}`,
      { evidence, culprit: failure },
    );
  // A Kubernetes-only rollout (no Talos target) does not move the stage off a Talos version.
  const movedOff = later.find(
    (r) => r.talosVersion !== undefined && !sameVersion(r.talosVersion, version) && (r.startTime ?? 0) < eligibleAt,
  );
  if (movedOff)
    return verdict(
      stage,
      'SoakInterrupted',
      `${name} moved from ${version} to ${movedOff.talosVersion ?? '?'} (${movedOff.file}) before the soak ended at ${iso(eligibleAt)}`,
      { evidence, culprit: movedOff },
    );
  if (now < eligibleAt)
    return verdict(stage, 'Soaking', `${name} completed ${version} at ${iso(done)}; soaking until ${iso(eligibleAt)}`, {
      evidence,
      eligibleAt,
    });
  return verdict(
    stage,
    'Eligible',
    `${name} completed ${version} at ${iso(done)} and it soaked until ${iso(eligibleAt)}`,
    { evidence, eligibleAt },
  );
}
