// Installer pre-pulls as the Talos simulator's record shows them, and the bounds a rollout must keep,
// checked from that record alone (never from the controller's status). On each node the last
// ImageService.Pull of the installer before its LifecycleService.Upgrade is the node's own pull;
// an earlier Pull of the same image is a pre-pull.
import type { SimCall } from './node.js';

export interface InstallerPulls {
  node: string;
  image: string;
  /** The pre-pull, when there was one (the first Pull of the image before the node's own). */
  prePull: SimCall | undefined;
  /** The node's own pull (the last Pull of the image before LifecycleService.Upgrade). */
  own: SimCall;
}

/** Every node's installer pulls, in the order of their own pulls. Nodes that never ran LifecycleService.Upgrade are left out. */
export function installerPulls(calls: readonly SimCall[]): InstallerPulls[] {
  const out: InstallerPulls[] = [];
  for (const upgrade of calls.filter((c) => c.method === 'LifecycleService.Upgrade')) {
    const pulls = calls.filter(
      (c) =>
        c.node === upgrade.node && c.method === 'ImageService.Pull' && c.image === upgrade.image && c.seq < upgrade.seq,
    );
    // Only pulls since the node's previous upgrade (a node upgraded twice pulls twice).
    const previous =
      calls
        .filter((c) => c.node === upgrade.node && c.method === 'LifecycleService.Upgrade' && c.seq < upgrade.seq)
        .at(-1)?.seq ?? 0;
    const mine = pulls.filter((c) => c.seq > previous);
    const own = mine.at(-1);
    if (!own) continue;
    out.push({ node: upgrade.node, image: upgrade.image ?? '', prePull: mine.length > 1 ? mine[0] : undefined, own });
  }
  return out.sort((a, b) => a.own.seq - b.own.seq);
}

/** Highest number of [from, to) intervals open at once. */
function peak(intervals: readonly [number, number][]): number {
  const edges = intervals
    .flatMap(([from, to]): [number, number][] => [
      [from, 1],
      [to, -1],
    ])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let max = 0;
  for (const [, d] of edges) max = Math.max(max, (open += d));
  return max;
}

export interface PlanGroup {
  name: string;
  concurrency: number;
  nodes: readonly string[];
}

/**
 * What the record (the calls since the plan was applied) shows against the pre-pull bounds, per
 * group in rollout order:
 * - never more than `concurrency` pre-pulls in flight at once;
 * - at most one round ahead: never more than `concurrency` nodes pre-pulled and still waiting for their own pull;
 * - never on a node of a group whose turn has not come: every node of the earlier groups was rebooted
 *   (its MachineService.Reboot answered) before the pre-pull began.
 * Empty: no violation.
 */
export function prePullViolations(calls: readonly SimCall[], groups: readonly PlanGroup[]): string[] {
  const pulls = installerPulls(calls);
  const out: string[] = [];
  const rebootedAt = (node: string): number =>
    Math.max(
      ...calls.filter((c) => c.node === node && c.method === 'MachineService.Reboot').map((c) => c.endedAt ?? Infinity),
      -Infinity,
    );
  groups.forEach((g, i) => {
    const mine = pulls.filter((p) => g.nodes.includes(p.node) && p.prePull !== undefined);
    const inFlight = peak(mine.map((p) => [p.prePull?.at ?? 0, p.prePull?.endedAt ?? Infinity]));
    if (inFlight > g.concurrency)
      out.push(`group ${g.name}: ${inFlight} pre-pulls in flight at once (concurrency ${g.concurrency})`);
    const ahead = peak(mine.map((p) => [p.prePull?.at ?? 0, p.own.at]));
    if (ahead > g.concurrency)
      out.push(
        `group ${g.name}: ${ahead} nodes pre-pulled ahead of their turn at once (more than one round of ${g.concurrency})`,
      );
    const earlier = groups.slice(0, i).flatMap((e) => e.nodes);
    for (const p of mine) {
      const late = earlier.filter((n) => rebootedAt(n) > (p.prePull?.at ?? 0));
      if (late.length > 0)
        out.push(
          `group ${g.name}: ${p.node} pre-pulled while the earlier group's ${late.join(', ')} had not rebooted yet`,
        );
    }
  });
  // Any pull on a node of no group at all.
  const all = new Set(groups.flatMap((g) => g.nodes));
  const outside = new Set(calls.filter((c) => c.method === 'ImageService.Pull' && !all.has(c.node)).map((c) => c.node));
  for (const node of outside) out.push(`${node} is in no group of the plan but was pulled on`);
  return out;
}
