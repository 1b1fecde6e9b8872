// When the report of a plan gets a commit: once the plan rolls out, only when the rendered content
// changed, and at most once per interval per plan (the rest waits for an exact timer).

import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { awaitsPreflightRetry } from '../plan/preflight-retry.js';

export const REPORT_MIN_INTERVAL_MS = 30_000;

const TERMINAL = new Set(['Completed', 'Failed', 'Cancelled']);
const NOT_STARTED = new Set(['Pending', 'Preflighting', 'Watching']);

/** The rollout is over: a terminal phase, except a failed preflight that is retried (its PR stays a draft). */
export const isTerminal = (
  status: { phase?: string | undefined; conditions?: PatchPlanStatus['conditions'] },
  jobCount: number,
): boolean => status.phase !== undefined && TERMINAL.has(status.phase) && !awaitsPreflightRetry(status, jobCount);

/**
 * A plan is reported once it leaves Pending/Preflighting, or as soon as it has PatchJobs, and once
 * status.startTime is set: the rollout id depends on it, so reporting before it would open a PR
 * under an id that changes a moment later.
 */
export const isReportable = (phase: string | undefined, jobCount: number, startTime: string | undefined): boolean =>
  startTime !== undefined && (jobCount > 0 || (phase !== undefined && !NOT_STARTED.has(phase)));

/**
 * Identity of one rollout of a plan name: a recreated plan (new UID) or a restarted rollout (new
 * startTime) gets a new id, hence a new branch and PR. 8 hex digits of FNV-1a: only needs to tell
 * rollouts of the same plan name apart.
 */
export function rolloutId(uid: string, startTime: string | undefined): string {
  let h = 0x811c9dc5;
  for (const ch of `${uid}/${startTime ?? ''}`) {
    h ^= ch.codePointAt(0) ?? 0;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

export interface ReportDueInput {
  /** Rendered content differs from what the branch last got from us. */
  changed: boolean;
  /** epoch ms of our last report commit for this plan, undefined when none in this process. */
  lastCommitAt: number | undefined;
  now: number;
  minIntervalMs: number;
}

export type ReportDecision = { action: 'none' } | { action: 'commit' } | { action: 'wait'; ms: number };

export function reportDue(i: ReportDueInput): ReportDecision {
  if (!i.changed) return { action: 'none' };
  const ms = commitHeldBackMs(i);
  return ms === undefined ? { action: 'commit' } : { action: 'wait', ms };
}

/**
 * How long the rate limit still holds back the plan's next report commit; undefined when one may be
 * written now. Asked before rendering: a report of thousands of nodes takes a core for seconds, and
 * job events wake the plan's report many times a second, while nothing rendered could be written.
 */
export function commitHeldBackMs(i: Omit<ReportDueInput, 'changed'>): number | undefined {
  if (i.lastCommitAt === undefined) return undefined;
  const next = i.lastCommitAt + i.minIntervalMs;
  return i.now >= next ? undefined : next - i.now;
}
