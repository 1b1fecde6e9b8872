// Status transitions shared by the phases: entering a phase with its deadline, failing, waiting.
import type { PatchJobPhase, PatchJobStatus } from '../../../schemas/patchjob.js';
import { epoch, iso } from '../time.js';
import type { JobEvent, JobStep } from './types.js';

export { durationMs, epoch, iso } from '../time.js';

/** The reason (CamelCase, for machines) and message (for people) a status carries; they always travel together. */
export interface StatusNote {
  reason: string;
  message: string;
}

/** A phase to enter: its deadline is `timeoutMs` after entering (none when undefined). */
export interface PhaseEntry extends StatusNote {
  phase: PatchJobPhase;
  timeoutMs?: number | undefined;
}

/** Enters `phase` now, with a deadline `timeoutMs` ahead (persisted, so a restart keeps it). */
export function enterPhase(
  status: PatchJobStatus,
  now: number,
  { phase, timeoutMs, reason, message }: PhaseEntry,
): PatchJobStatus {
  const next: PatchJobStatus = { ...status, phase, phaseStartTime: iso(now), reason, message };
  if (timeoutMs === undefined) delete next.deadline;
  else next.deadline = iso(now + timeoutMs);
  return next;
}

/** A terminal failure: the cleanup (uncordon, lease release) follows in the next passes. */
export function failed(
  status: PatchJobStatus,
  now: number,
  { reason, message }: StatusNote,
  events: JobEvent[] = [],
): JobStep {
  const next = enterPhase(status, now, { phase: 'Failed', reason, message });
  next.completionTime = iso(now);
  return {
    status: next,
    events: [...events, { type: 'Warning', reason, note: message, onNode: true }],
    requeueAfterMs: 0,
  };
}

/**
 * Two steps in one status write: `first`, then `next` (decided on first's status from facts this
 * pass observed) when `next` only records (no action, no fresh read). Record first still holds:
 * nothing acts on what `next` records before the write lands. Otherwise `first` alone.
 */
export function thenRecord(first: JobStep, next: JobStep): JobStep {
  if (next.action !== undefined || next.confirm !== undefined) return first;
  return { ...next, events: [...first.events, ...next.events] };
}

/** Stay in the phase with a reason and message; look again at `retryMs` or the deadline, whichever is first. */
export function waiting(
  status: PatchJobStatus,
  now: number,
  { reason, message }: StatusNote,
  retryMs?: number,
): JobStep {
  const deadline = epoch(status.deadline);
  const untilDeadline = deadline === undefined ? undefined : Math.max(0, deadline - now);
  const candidates = [retryMs, untilDeadline].filter((v): v is number => v !== undefined);
  return {
    status: { ...status, reason, message },
    events: [],
    requeueAfterMs: candidates.length > 0 ? Math.min(...candidates) : undefined,
  };
}

/** True once the current phase's deadline has passed. */
export function pastDeadline(status: PatchJobStatus, now: number): boolean {
  const deadline = epoch(status.deadline);
  return deadline !== undefined && now >= deadline;
}

/** Retry delay that grows with the time already spent in the phase: quick at first, at most `maxMs`. */
export function growingRetry(status: PatchJobStatus, now: number, minMs = 250, maxMs = 5_000): number {
  const since = epoch(status.phaseStartTime) ?? now;
  return Math.min(maxMs, Math.max(minMs, Math.round((now - since) / 4)));
}

/** A copy without the given fields (absent fields are removed from the stored status). */
export function without(status: PatchJobStatus, ...keys: (keyof PatchJobStatus)[]): PatchJobStatus {
  const next = { ...status };
  for (const k of keys) delete next[k];
  return next;
}
