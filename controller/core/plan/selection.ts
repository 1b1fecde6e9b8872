// Which nodes a plan patches and in which group: nodeSelector is the population; the first group
// in strategy.order whose filter a node matches claims it; nodes no listed group claims are never
// touched. The controller's own node goes last in its group.
import { BuiltInGroup } from '../../../schemas/api.js';
import type { PatchPlanSpec } from '../../../schemas/patchplan.js';
import { matchesSelector } from '../selector.js';
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

export function selectNodes(spec: PatchPlanSpec, nodes: readonly PlanNodeFacts[], ownNode?: string): Selection {
  const population = nodes.filter((n) => matchesSelector(spec.nodeSelector, n.labels)).sort((a, b) => a.name.localeCompare(b.name));
  const groups: GroupPlan[] = spec.strategy.order.map((name) => ({ name, concurrency: spec.groups[name]?.concurrency ?? 1, nodes: [] }));
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
  if (ownNode !== undefined) {
    for (const g of groups) {
      const i = g.nodes.indexOf(ownNode);
      if (i >= 0) g.nodes.push(...g.nodes.splice(i, 1));
    }
  }
  return { groups, groupOf, unclaimed };
}
