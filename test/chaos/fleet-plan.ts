// A scenario made concrete: node names, labels and versions, the PatchPlan document, and which
// node each group claims and which nodes must fail — worked out here, from the scenario alone, so
// the checker never takes the controller's word for any of it.
import type { PlanDoc } from '../e2e/support/plans.js';
import { TALOS_SECRET } from '../e2e/support/job-lab.js';
import {
  KUBERNETES_TARGET,
  NODE_FAILURES,
  TALOS_LEGACY,
  TALOS_LIFECYCLE,
  TALOS_TARGET,
  type FaultKind,
  type Scenario,
} from './scenario.js';

export const PLAN = 'chaos';
const HOUR = 3_600_000;

export interface ChaosNode {
  name: string;
  controlPlane: boolean;
  talosVersion: string;
  labels: Record<string, string>;
  /** In the plan's nodeSelector. */
  selected: boolean;
  /** The group that claims it (first in strategy.order that matches), for selected nodes. */
  group: string | undefined;
}

export interface ConcretePlan {
  nodes: ChaosNode[];
  doc: PlanDoc;
  /** Node each node-failure fault hits (distinct, selected nodes). */
  failing: Map<FaultKind, string>;
  /** The phase the plan must end in. */
  expectedPhase: 'Completed' | 'Failed' | 'Paused';
  /** How many events of its kind each moment fault waits for (same order as the scenario's faults; standing faults: undefined). */
  triggerCounts: (number | undefined)[];
  /** With clock-jump: the window's opening (epoch ms) and the offset that puts a controller two hours before it. */
  window: { opening: number; offsetBefore: number } | undefined;
}

const hh = (ms: number): string => `${String(new Date(ms).getUTCHours()).padStart(2, '0')}:00`;

export function concretePlan(s: Scenario, now: number, talosEndpoints: string[]): ConcretePlan {
  const nodes = fleetOf(s);
  const failing = failingNodes(s, nodes);
  const budget = Math.max(1, s.failurePolicy.maxFailures);
  const expectedPhase = failing.size >= budget ? (s.failurePolicy.type === 'Halt' ? 'Failed' : 'Paused') : 'Completed';
  const jump = s.faults.some((f) => f.kind === 'clock-jump');
  const opening = Math.ceil(now / HOUR) * HOUR + 3 * HOUR;
  const window = jump ? { opening, offsetBefore: opening - 2 * HOUR - now } : undefined;
  // The events a rollout of these nodes brings, roughly: a trigger at share x fires x of the way through.
  const selected = nodes.filter((n) => n.selected).length;
  const totals = { jobPhase: 4 * selected, talosCall: selected, podDeleting: s.replicas, statusWrite: 5 * selected };
  const triggerCounts = s.faults.map((f) =>
    f.trigger ? 1 + Math.floor(f.trigger.share * totals[f.trigger.on]) : undefined,
  );
  return {
    nodes,
    doc: planDoc(s, { now, talosEndpoints, failing, jumpOpening: window?.opening }),
    failing,
    expectedPhase,
    triggerCounts,
    window,
  };
}

/** The nodes with their versions and labels, and the group that claims each selected one. */
function fleetOf(s: Scenario): ChaosNode[] {
  const nodes: ChaosNode[] = [];
  for (let i = 1; i <= s.controlPlanes; i++) {
    nodes.push({
      name: `cp-${i}`,
      controlPlane: true,
      talosVersion: s.lifecycleControlPlanes.includes(i) ? TALOS_LIFECYCLE : TALOS_LEGACY,
      labels: { environment: 'production' },
      selected: true,
      group: undefined,
    });
  }
  // Label values kubectl's YAML 1.1 reads as strings too (`yes` would arrive as a boolean).
  for (let i = 1; i <= s.nodes - s.controlPlanes; i++) {
    const labels: Record<string, string> = { environment: s.staging.includes(i) ? 'staging' : 'production' };
    for (const [group, members] of Object.entries(s.groupMembers)) if (members.includes(i)) labels[group] = 'member';
    nodes.push({
      name: `worker-${i}`,
      controlPlane: false,
      talosVersion: s.lifecycleWorkers.includes(i) ? TALOS_LIFECYCLE : TALOS_LEGACY,
      labels,
      selected: !s.staging.includes(i),
      group: undefined,
    });
  }
  const claims = (n: ChaosNode, g: string): boolean => {
    if (g === 'controlPlane') return n.controlPlane;
    if (g === 'workers') return !n.controlPlane;
    const label = s.groups.find((x) => x.name === g)?.label;
    return label !== undefined && n.labels[label] === 'member';
  };
  for (const n of nodes) if (n.selected) n.group = s.order.find((g) => claims(n, g));
  return nodes;
}

/**
 * Node-failure faults hit distinct selected nodes, chosen by their drawn index. Workers only where
 * it matters: the PDB-blocked pod needs one to run on (control planes take no workloads in the
 * lab), and with a Kubernetes target a control plane that fails holds every other one at its
 * kubelet step (skew) until kubernetesUpgradeTimeout: a cascade this model does not predict.
 */
function failingNodes(s: Scenario, nodes: ChaosNode[]): Map<FaultKind, string> {
  const failing = new Map<FaultKind, string>();
  let free = nodes.filter((n) => n.selected && n.group !== undefined);
  for (const f of s.faults) {
    const eligible = free.filter((n) => !n.controlPlane || (f.kind !== 'pdb-blocked' && !s.kubernetes));
    const node = eligible[(f.nodeIndex ?? 0) % Math.max(1, eligible.length)];
    if (!NODE_FAILURES.includes(f.kind) || !node) continue;
    failing.set(f.kind, node.name);
    free = free.filter((n) => n !== node);
  }
  return failing;
}

/** What the PatchPlan document needs beside the scenario. */
interface PlanDocInput {
  now: number;
  talosEndpoints: string[];
  /** Node each node-failure fault hits: their deadlines are made short. */
  failing: Map<FaultKind, string>;
  /** With clock-jump: the maintenance window's opening (epoch ms). */
  jumpOpening: number | undefined;
}

function planDoc(s: Scenario, { now, talosEndpoints, failing, jumpOpening }: PlanDocInput): PlanDoc {
  const maintenance =
    jumpOpening !== undefined
      ? { windows: [{ days: ['Any'], startTime: hh(jumpOpening), endTime: hh(jumpOpening + HOUR) }] }
      : s.window
        ? { windows: [{ days: ['Any'], startTime: hh(now - HOUR), endTime: hh(now + 3 * HOUR) }] }
        : undefined;
  const groups: Record<string, unknown> = {};
  for (const g of s.groups)
    groups[g.name] = g.label
      ? { selector: { matchLabels: { [g.label]: 'member' } }, concurrency: g.concurrency }
      : { concurrency: g.concurrency };
  return {
    apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
    kind: 'PatchPlan',
    metadata: { name: PLAN },
    spec: {
      target: { talosVersion: TALOS_TARGET, ...(s.kubernetes ? { kubernetesVersion: KUBERNETES_TARGET } : {}) },
      nodeSelector: { matchLabels: { environment: 'production' } },
      groups,
      strategy: { order: s.order },
      failurePolicy: s.failurePolicy,
      delayBetweenNodes: `${s.delayBetweenNodesS}s`,
      // Short only where a fault needs the deadline to pass; generous enough for every outage drawn.
      ...(failing.has('pdb-blocked') ? { drainTimeout: '30s' } : {}),
      ...(failing.has('node-never-back') ? { rebootTimeout: '30s' } : {}),
      ...(maintenance ? { maintenance } : {}),
      talosConfig: { endpoints: talosEndpoints, secretRef: { name: TALOS_SECRET } },
    },
  };
}
