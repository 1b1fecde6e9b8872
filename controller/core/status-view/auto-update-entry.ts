// An auto-update template's part of the status view: its last release check, the pending and
// proposed versions, the child plan that blocks it, promotion, and the children it proposed.
import type { AutoUpdateStatus } from '../../../schemas/patchplan.js';
import type { AutoUpdateEntry, ChildEntry, PlanEntry } from './document.js';

type Check = Omit<AutoUpdateEntry, 'children' | 'promotion' | 'lastError' | 'blockedBy'>;

function check(a: AutoUpdateStatus): Check {
  const fields: (keyof Check)[] = [
    'lastCheckTime',
    'nextCheckTime',
    'currentVersion',
    'latestVersion',
    'pendingVersion',
    'pendingEligibleTime',
    'pendingHeldBy',
    'lastProposedVersion',
    'lastProposalURL',
  ];
  const out: Check = {};
  for (const f of fields) {
    const v = a[f];
    if (v !== undefined) out[f] = v;
  }
  return out;
}

function promotion(a: AutoUpdateStatus): Pick<AutoUpdateEntry, 'promotion'> {
  const p = a.promotion;
  if (!p) return {};
  const stages = (p.stages ?? []).map((s) => ({
    cluster: s.cluster,
    state: s.state,
    ...(s.eligibleTime ? { eligibleTime: s.eligibleTime } : {}),
    message: s.message,
  }));
  return {
    promotion: {
      reason: p.reason,
      ...(p.version ? { version: p.version } : {}),
      ...(p.eligibleTime ? { eligibleTime: p.eligibleTime } : {}),
      stages,
    },
  };
}

function childEntry(p: PlanEntry): ChildEntry {
  return {
    name: p.name,
    phase: p.phase,
    ...(p.target.talosVersion ? { talosVersion: p.target.talosVersion } : {}),
    completed: p.counts.completed,
    total: p.counts.total,
    failed: p.counts.failed,
  };
}

/** `children`: the template's child plans, newest first. */
export function autoUpdateEntry(a: AutoUpdateStatus | undefined, children: readonly PlanEntry[]): AutoUpdateEntry {
  const s = a ?? {};
  return {
    ...check(s),
    ...(s.blockedBy ? { blockedBy: { ...s.blockedBy } } : {}),
    ...(s.lastError ? { lastError: `${s.lastError.reason}: ${s.lastError.message}` } : {}),
    ...promotion(s),
    children: children.map(childEntry),
  };
}
