// Which nodes a plan patches and in which group: nodeSelector is the population; the first group
// in strategy.order whose filter a node matches claims it; nodes no listed group claims are never
// touched. The etcd leader (as the preflight found it) goes last in its group, so leadership moves
// once, and the controller's own node goes last of all in its group.
import { BuiltInGroup } from '../../../schemas/api.js';
import type { PatchPlanSpec, PatchPlanStatus } from '../../../schemas/patchplan.js';
import { leaderLast } from '../etcd/index.js';
import { matchesSelector } from '../selector.js';
import { jobName } from './names.js';
import type { PlanNodeFacts } from './types.js';

export interface GroupPlan {
  name: string;
  concurrency: number;
  /** Claimed nodes in scheduling order. */
  nodes: string[];
}

export interface Selection {
  /** Groups in strategy.order, each with the nodes it claims. */
  groups: GroupPlan[];
  /** Node name → group. */
  groupOf: Map<string, string>;
  /** Selected by nodeSelector but claimed by no listed group. */
  unclaimed: string[];
}

function inGroup(spec: PatchPlanSpec, group: string, node: PlanNodeFacts): boolean {
  if (group === BuiltInGroup.ControlPlane) return node.controlPlane;
  if (group === BuiltInGroup.Workers) return !node.controlPlane;
  const selector = spec.groups[group]?.selector;
  return selector !== undefined && matchesSelector(selector, node.labels);
}

export function selectNodes(
  spec: PatchPlanSpec,
  nodes: readonly PlanNodeFacts[],
  ownNode?: string,
  etcdLeader?: string,
): Selection {
  const population = nodes
    .filter((n) => matchesSelector(spec.nodeSelector, n.labels))
    .sort((a, b) => a.name.localeCompare(b.name));
  const groups: GroupPlan[] = spec.strategy.order.map((name) => ({
    name,
    concurrency: spec.groups[name]?.concurrency ?? 1,
    nodes: [],
  }));
  const groupOf = new Map<string, string>();
  const unclaimed: string[] = [];
  for (const node of population) {
    const group = groups.find((g) => inGroup(spec, g.name, node));
    if (!group) unclaimed.push(node.name);
    else {
      group.nodes.push(node.name);
      groupOf.set(node.name, group.name);
    }
  }
  for (const g of groups) {
    g.nodes = leaderLast(g.nodes, etcdLeader);
    if (ownNode === undefined) continue;
    const i = g.nodes.indexOf(ownNode);
    if (i >= 0) g.nodes.push(...g.nodes.splice(i, 1));
  }
  return { groups, groupOf, unclaimed };
}

/** A node and the group that claims it. */
export interface NodeInGroup {
  node: string;
  group: string;
}

/** A plan's selection with the index its passes look Leases up in: job name → node and group. */
export interface PlanSelection extends Selection {
  nodeOfJob: ReadonlyMap<string, NodeInGroup>;
}

interface Kept {
  key: string;
  /** The node facts the selection was made from, in the order given (the informer's, stable across passes). */
  from: PlanNodeFacts[];
  selection: PlanSelection;
}

/** Plans remembered; a plan beyond this many is selected afresh on each pass (still right, only slower). */
const KEEP = 64;
const kept = new Map<string, Kept>();

/**
 * selectNodes for a plan's pass (of one hop, for a stepwise plan: `hop` names its jobs), remembered between passes while nothing it reads changed: the
 * plan's selection fields, the etcd leader in its status, the controller's node, and each node's name, labels and role. A pass at
 * 5,000 nodes sorted and matched all of them, and named every node's job twice, to look up a few
 * Leases; now it compares the node facts it was given with those it kept (the same objects, unless a
 * node changed) and names the jobs once per selection.
 */
export function planSelection(
  plan: { name: string; uid: string; spec: PatchPlanSpec; status?: PatchPlanStatus },
  nodes: readonly PlanNodeFacts[],
  ownNode?: string,
  hop?: number,
): PlanSelection {
  const { nodeSelector, groups, strategy } = plan.spec;
  const leader = plan.status?.etcd?.leader;
  const key = JSON.stringify([
    plan.name,
    hop ?? null,
    ownNode ?? null,
    leader ?? null,
    nodeSelector ?? null,
    groups,
    strategy.order,
  ]);
  const known = kept.get(plan.uid);
  if (known !== undefined && known.key === key && sameSelectionFacts(known.from, nodes)) return known.selection;
  const selection = selectNodes(plan.spec, nodes, ownNode, leader);
  const nodeOfJob = new Map(
    [...selection.groupOf].map(([node, group]) => [jobName(plan.name, node, hop), { node, group }]),
  );
  const entry: Kept = { key, from: [...nodes], selection: { ...selection, nodeOfJob } };
  kept.delete(plan.uid); // re-inserted last: the oldest plan is the first one forgotten
  kept.set(plan.uid, entry);
  if (kept.size > KEEP) kept.delete(kept.keys().next().value ?? '');
  return entry.selection;
}

/** Whether `nodes` are the kept ones as selection reads them; a node changed in other ways is kept anew, so the next pass compares by identity. */
function sameSelectionFacts(from: PlanNodeFacts[], nodes: readonly PlanNodeFacts[]): boolean {
  if (from.length !== nodes.length) return false;
  for (let i = 0; i < nodes.length; i++) {
    const was = from[i];
    const now = nodes[i];
    if (was === now) continue;
    if (
      was === undefined ||
      now === undefined ||
      was.name !== now.name ||
      was.controlPlane !== now.controlPlane ||
      !sameLabels(was.labels, now.labels)
    )
      return false;
    from[i] = now;
  }
  return true;
}

function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}
