// `kangal-patch preview` on an auto-update template: what it would propose now and, for every newer
// release, why not (not an allowed step, too young, not yet promoted upstream and by which stage).
// Pure: the same decision the controller makes, with the forge-side facts (skipped versions, open
// proposals, child plans) left out and said so.
import semver from 'semver';
import type { VersionVerdict } from '../promotion/decide.js';
import { stageName } from '../promotion/stage.js';
import { durationMs, iso } from '../time.js';
import {
  allowedStep,
  decideAutoUpdate,
  installerPublished,
  type AutoUpdateInput,
  type AutoUpdateSpec,
} from './decide.js';
import { stableReleases, type Release } from './releases.js';

interface VersionWhyNot {
  version: string;
  /** Proposed, or the first reason it is not. */
  state:
    | 'Proposed'
    | 'NotAllowedStep'
    | 'NoGhcrInstaller'
    | 'TooYoung'
    | 'NotPromoted'
    | 'SoakingUpstream'
    | 'OlderThanProposal';
  message: string;
}

export interface TemplateExplanation {
  currentVersion: string | undefined;
  proposal: string | undefined;
  /** The decision's one sentence. */
  summary: string;
  /** Stable releases above the current version, newest first. */
  versions: VersionWhyNot[];
}

export function explainTemplate(
  input: Omit<AutoUpdateInput, 'promotionGate'>,
  verdicts: readonly VersionVerdict[] | undefined,
): TemplateExplanation {
  const gate = verdicts && new Map(verdicts.map((v) => [v.version, v.eligibleAt]));
  const decision = decideAutoUpdate({ ...input, promotionGate: gate });
  const proposal = decision.action.type === 'none' ? undefined : decision.action.proposal.version;
  const current = input.currentVersion;
  const above =
    current === undefined || semver.valid(current) === null
      ? []
      : stableReleases(input.releases).filter((r) => semver.gt(r.tagName, current));
  const explaining: Explaining = { input, verdicts, proposal, summary: decision.message };
  const versions = above.map((r) => versionWhyNot(r, explaining));
  return { currentVersion: current, proposal, summary: decision.message, versions };
}

/** What each version's explanation reads: the template's input, the upstream verdicts, the proposal and the decision's sentence. */
interface Explaining {
  input: Omit<AutoUpdateInput, 'promotionGate'>;
  verdicts: readonly VersionVerdict[] | undefined;
  proposal: string | undefined;
  summary: string;
}

/** Proposed, or the first reason `r` is not: not an allowed step, no ghcr installer, too young, or the promotion. */
function versionWhyNot(r: Release, e: Explaining): VersionWhyNot {
  const { input, proposal } = e;
  const current = input.currentVersion;
  const spec: AutoUpdateSpec = input.spec;
  const v = r.tagName;
  if (v === proposal) return { version: v, state: 'Proposed', message: `would be proposed now` };
  if (current === undefined || allowedStep(current, v, { allow: spec.allow, stepwise: input.stepwise }) === undefined)
    return {
      version: v,
      state: 'NotAllowedStep',
      message: `not a ${spec.allow} step from ${current ?? '?'} (allow: ${spec.allow})`,
    };
  if (!installerPublished(input, v))
    return {
      version: v,
      state: 'NoGhcrInstaller',
      message:
        'ghcr.io/siderolabs/installer is not published from Talos 1.14: set target.source: factory with target.installer to follow it',
    };
  const agedAt = (r.publishedAt ?? input.now) + durationMs(spec.minReleaseAge);
  if (agedAt > input.now)
    return {
      version: v,
      state: 'TooYoung',
      message: `younger than minReleaseAge ${spec.minReleaseAge} until ${iso(agedAt)}`,
    };
  return promotionWhyNot(v, e);
}

/** An allowed, aged version: held by the upstream stages, soaking upstream, or older than the proposal. */
function promotionWhyNot(v: string, { input, verdicts, proposal, summary }: Explaining): VersionWhyNot {
  const verdict = verdicts?.find((x) => x.version === v);
  if (verdict && verdict.eligibleAt === undefined) {
    const missing = verdict.stages.filter((s) => s.state !== 'Eligible' && s.state !== 'Soaking');
    return {
      version: v,
      state: 'NotPromoted',
      message: `not yet promoted: ${missing.map((s) => `${stageName(s.stage)} ${s.state} (${s.message})`).join('; ')}`,
    };
  }
  if (verdict?.eligibleAt !== undefined && verdict.eligibleAt > input.now)
    return { version: v, state: 'SoakingUpstream', message: `soaking upstream until ${iso(verdict.eligibleAt)}` };
  return {
    version: v,
    state: 'OlderThanProposal',
    message: proposal === undefined ? summary : `older than ${proposal}, which would be proposed`,
  };
}
