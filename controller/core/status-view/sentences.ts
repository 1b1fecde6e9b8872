// The sentences of the status view: what a plan waits for (one sentence), what a node waits for,
// and versions before → after. Pure: the clock and the viewer's zone come in TextOptions.
import type { NodeEntry, PlanEntry, VersionChange, Wait } from './document.js';
import { duration, instant, ms } from './time-text.js';

export interface TextOptions {
  /** `wide` adds columns: group, versions, total time, readiness, slots. */
  wide: boolean;
  /** Characters per line (Infinity: no limit). */
  width: number;
  /** The viewer's IANA time zone; instants are shown in it and in UTC. */
  zone: string;
  nowMs: number;
}

/** `10:05:00 CET (09:05:00 UTC, in 4m10s)`, or '' for an absent or unreadable time. */
export function at(time: string | undefined, o: TextOptions): string {
  const t = ms(time);
  return t === undefined ? '' : instant(t, o.nowMs, o.zone);
}

/** `Reason: message` (either alone when the other is empty). */
export const reasonText = (w: Wait): string =>
  [w.reason, w.message].filter((x) => x !== undefined && x !== '').join(': ');

/** [`Reason: message`, `Draining gives up 10:05:00 CET (09:05:00 UTC, in 4m10s)`], the empty ones left out. */
function waitParts(w: Wait, o: TextOptions): string[] {
  const until = w.until === undefined ? '' : `${w.untilWhat ?? 'until'} ${at(w.until, o)}`;
  return [reasonText(w), until].filter((x) => x !== '');
}

const RESUME = (name: string): string =>
  `resume: kubectl patch patchplan ${name} --type merge -p '{"spec":{"paused":false}}'`;

/** How it ended; the reason is left out where it only repeats the phase (Completed: Completed). */
function finishedSentence(p: PlanEntry, o: TextOptions): string[] {
  const what = reasonText(p.wait.reason === p.phase ? { message: p.wait.message } : p.wait);
  if (p.phase !== 'Completed') return [`${p.phase.toLowerCase()}${what ? `: ${what}` : ''}`];
  const took = p.secondsTotal === undefined ? '' : ` in ${duration(p.secondsTotal * 1000)}`;
  return [`completed${took}`, p.completionTime ? `at ${at(p.completionTime, o)}` : '', what];
}

/** One sentence in clauses (joined with "; "): what the plan waits for (reason, message, until when), or how it ended. */
export function planSentence(p: PlanEntry, o: TextOptions): string[] {
  if (p.finished) return finishedSentence(p, o).filter((x) => x !== '');
  if (p.paused) {
    // The failure policy's own reason says no more than "paused by the failure policy".
    const what = waitParts(
      p.pausedBy === 'failurePolicy' && p.wait.reason === 'PausedByFailurePolicy'
        ? { ...p.wait, reason: undefined }
        : p.wait,
      o,
    );
    const by = p.pausedBy === 'failurePolicy' ? 'paused by the failure policy' : 'paused (spec.paused)';
    return [`${by}${what.length ? `: ${what[0] ?? ''}` : ''}`, ...what.slice(1), RESUME(p.name)];
  }
  const what = waitParts(p.wait, o);
  if (what.length > 0) return what;
  return [p.phase === 'Pending' ? 'Pending: the controller has not picked it up yet' : p.phase];
}

/** `v1.12.4 → v1.13.2`, or the one version when nothing moves; `to` picks the target (a running node) or what it runs (a finished one). */
export function change(v: VersionChange, to: 'target' | 'after'): string {
  const end = (to === 'target' ? v.target : v.after) ?? v.after;
  // Not moved by the plan and not readable (no Nodes for this viewer): it did not change.
  if (v.before === undefined && end === undefined) return v.target === undefined ? 'unchanged' : '?';
  if (v.before === undefined || end === undefined || v.before === end) return (end ?? v.before) as string;
  return `${v.before} → ${end}`;
}

/** What a running node waits for, in clauses: the drain's PDB, the etcd gate's stage, readiness, then the job's reason, message and deadline. */
export function nodeWaitParts(n: NodeEntry, o: TextOptions): string[] {
  const extras = [
    ...(n.blockingPDB && !(n.wait.message ?? '').includes(n.blockingPDB)
      ? [`drain blocked by PodDisruptionBudget ${n.blockingPDB}`]
      : []),
    ...(n.etcdWait ? [`etcd gate: ${n.etcdWait}`] : []),
    ...(n.ready === false ? ['node NotReady'] : []),
  ];
  return [...extras, ...waitParts(n.wait, o)];
}
