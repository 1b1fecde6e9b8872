// What a plan would do on the cluster as it is now, without changing anything: `kangal-patch
// preview` prints it and auto-update proposals show it in their PR body. It is computed from the
// same selection as the scheduler (plan/selection.ts selectNodes), so the order shown is the order
// the plan reconciler schedules nodes in. Pure: time is an argument.
//
// Estimated duration (the model, also in docs/gitops.md "Previewing a rollout"):
// - Per group, the nodes that need work are scheduled `concurrency` at a time, in the order shown;
//   a group starts after the previous one finished, so a group takes rounds = ceil(nodes / concurrency)
//   rounds and the plan takes the sum over its groups.
// - A round lasts max(per-node time, delayBetweenNodes): the scheduler starts a new round no earlier
//   than delayBetweenNodes after the previous one started.
// - Per-node time, two figures: `typical` from TYPICAL_NODE_MS (drain + install + reboot of a Talos
//   node, plus the Kubernetes step with a Kubernetes target; defaults, not measured on your cluster)
//   and `worstCase` from the plan's own timeouts (drainTimeout + rebootTimeout
//   [+ kubernetesUpgradeTimeout]), the longest a node may take before it fails.
// - Installer pre-pulls (spec.prePull, on by default): a round whose nodes all run the lifecycle flow
//   (Talos >= 1.13) and is not its group's first had its installer pulled while the round before
//   it ran, so its per-node time leaves out TYPICAL_NODE_MS.pull. A group's first round cannot be
//   pre-pulled (the plan pulls only for the group whose turn it is), nor can a round with a legacy node.
// - Maintenance windows are not folded in: the estimate is working time once a window is open.
// - Nodes already at the target get a PatchJob that completes at once; they count for no round.
import semver from 'semver';
import type { PatchPlanSpec } from '../../schemas/patchplan.js';
import {
  installerFor,
  VANILLA_SCHEMATIC,
  type DetectedNode,
  type NodeInstallerAnnotations,
  type ResolvedInstaller,
} from './installer.js';
import { parseHold } from './plan/holds.js';
import { matchesSelector } from './selector.js';
import { UpgradeFlow, upgradeFlowFor } from './talos-flow.js';
import { selectNodes, type Selection } from './plan/selection.js';
import type { PlanNodeFacts } from './plan/types.js';
import { durationMs, iso } from './time.js';
import { windowState } from './windows.js';

/** The image, or none when the node's override annotations are wrong (the NodeOverrides check says why). */
const imageOf = (r: ResolvedInstaller | { problem: string }): string | undefined =>
  'problem' in r ? undefined : r.image;

/** A node as the preview needs it (kube NodeView fits). */
export interface PreviewNodeFacts extends PlanNodeFacts {
  kubeletVersion: string;
  schematic: string | undefined;
  /** What the node's Talos API said of its platform and Secure Boot, where the plan's factory installer leaves them to the node (the preflight's reads). */
  detected?: DetectedNode | undefined;
}

export interface PreviewInput {
  /** epoch ms */
  now: number;
  spec: PatchPlanSpec;
  /** Every node of the cluster. */
  nodes: readonly PreviewNodeFacts[];
  /** The node the controller runs on: scheduled last in its group. */
  ownNode?: string | undefined;
  /** The etcd leader's node as the EtcdHealthy check found it: last in its group, as the rollout orders it. */
  etcdLeader?: string | undefined;
}

export const SkipReason = {
  NotSelected: 'NotSelected',
  NoGroup: 'NoGroup',
  AlreadyAtTarget: 'AlreadyAtTarget',
} as const;
export type SkipReason = (typeof SkipReason)[keyof typeof SkipReason];

interface PreviewNode {
  name: string;
  /** 1-based position within its group, in scheduling order. */
  position: number;
  /** 1-based round within its group. */
  round: number;
  controlPlane: boolean;
  /** From the Node's osImage; undefined when it is no Talos image. */
  currentTalosVersion: string | undefined;
  currentKubernetesVersion: string;
  /** Talos version after the rollout (undefined: Talos untouched). */
  talosVersion: string | undefined;
  kubernetesVersion: string | undefined;
  /** The installer image the node gets (undefined: no Talos upgrade). */
  installerImage: string | undefined;
  /** Runs this controller: scheduled last in its group. */
  ownNode: boolean;
  /** The node's hold annotation: `hold` (its group waits for it) or `skip` (left out), with the reason given. */
  hold?: { kind: 'hold' | 'skip'; reason: string } | undefined;
  /** Installer override annotations on the node, as written (kangalpatch.ozalp.dk/installer, /schematic, /secure-boot). */
  installerOverride?: NodeInstallerAnnotations | undefined;
  /** Image Factory schematic the node runs → the one its installer carries, when they differ (extensions change). */
  schematicChange?: { from: string | undefined; to: string | undefined } | undefined;
}

interface PreviewGroup {
  name: string;
  concurrency: number;
  rounds: number;
  nodes: PreviewNode[];
}

interface SkippedNode {
  name: string;
  reason: SkipReason;
  message: string;
  /** The group that claims it (AlreadyAtTarget only). */
  group?: string;
}

interface PreviewWindow {
  open: boolean;
  /** RFC 3339; when open: the end of the current window. */
  closesAt?: string;
  /** RFC 3339; when closed: the next opening. */
  nextOpenAt?: string;
  reason: string;
}

interface PreviewEstimate {
  rounds: number;
  /** Rounds whose installer pull is off the critical path (pre-pulled while the round before ran). */
  prePulledRounds: number;
  perNodeTypicalMs: number;
  /** Of perNodeTypicalMs, the installer pull a pre-pulled round saves. */
  pullTypicalMs: number;
  perNodeWorstCaseMs: number;
  delayBetweenNodesMs: number;
  typicalMs: number;
  worstCaseMs: number;
}

export interface RolloutPreview {
  /** RFC 3339 time the preview was computed for. */
  at: string;
  /** path: stepwise when the target is a destination reached hop by hop. */
  target: { talosVersion: string | undefined; kubernetesVersion: string | undefined; path?: 'stepwise' | undefined };
  groups: PreviewGroup[];
  skipped: SkippedNode[];
  totals: { nodes: number; toPatch: number; skipped: number };
  window: PreviewWindow;
  estimate: PreviewEstimate;
}

/**
 * Typical time per node, by step (defaults: a Talos node drains in about a minute, installs in one
 * and a half of which the installer image pull is one, reboots in two).
 */
export const TYPICAL_NODE_MS = {
  drain: 60_000,
  install: 90_000,
  pull: 60_000,
  reboot: 120_000,
  kubernetes: 120_000,
} as const;

const same = (a: string | undefined, b: string): boolean =>
  a !== undefined && semver.valid(a) !== null && semver.valid(b) !== null && semver.eq(a, b);

/** Whether the node already runs every target of the plan. */
function atTarget(spec: PatchPlanSpec, node: PreviewNodeFacts): boolean {
  const { talosVersion, kubernetesVersion } = spec.target;
  const talosDone = talosVersion === undefined || same(node.talosVersion, talosVersion);
  const kubeDone = kubernetesVersion === undefined || same(node.kubeletVersion, kubernetesVersion);
  return talosDone && kubeDone;
}

export function previewRollout(input: PreviewInput): RolloutPreview {
  const { spec, now } = input;
  const sel: Selection = selectNodes(spec, input.nodes, input.ownNode, input.etcdLeader);
  const byName = new Map(input.nodes.map((n) => [n.name, n]));
  const skipped: SkippedNode[] = [];
  for (const n of [...input.nodes].sort((a, b) => a.name.localeCompare(b.name))) {
    if (!matchesSelector(spec.nodeSelector, n.labels))
      skipped.push({ name: n.name, reason: SkipReason.NotSelected, message: 'not selected by spec.nodeSelector' });
  }
  for (const name of sel.unclaimed)
    skipped.push({
      name,
      reason: SkipReason.NoGroup,
      message: `matches nodeSelector but no group in strategy.order (${spec.strategy.order.join(', ')}) claims it`,
    });
  const groups = sel.groups.map((g): PreviewGroup => {
    const nodes: PreviewNode[] = [];
    for (const name of g.nodes) {
      const facts = byName.get(name);
      if (!facts) continue;
      if (atTarget(spec, facts)) {
        skipped.push({
          name,
          reason: SkipReason.AlreadyAtTarget,
          group: g.name,
          message: `already runs the target (${describeTarget(spec)}): its PatchJob completes at once`,
        });
        continue;
      }
      nodes.push(previewNode(spec, facts, { index: nodes.length, concurrency: g.concurrency }, name === input.ownNode));
    }
    return { name: g.name, concurrency: g.concurrency, rounds: Math.ceil(nodes.length / g.concurrency), nodes };
  });
  const toPatch = groups.reduce((n, g) => n + g.nodes.length, 0);
  return {
    at: iso(now),
    target: {
      talosVersion: spec.target.talosVersion,
      kubernetesVersion: spec.target.kubernetesVersion,
      ...(spec.target.path === 'stepwise' ? { path: 'stepwise' as const } : {}),
    },
    groups,
    skipped,
    totals: { nodes: input.nodes.length, toPatch, skipped: skipped.length },
    window: previewWindow(spec, now),
    estimate: estimate(spec, groups),
  };
}

/** Where a node stands in its group's queue: its index, and how many nodes a round of the group takes. */
interface QueuePlace {
  index: number;
  concurrency: number;
}

function previewNode(
  spec: PatchPlanSpec,
  n: PreviewNodeFacts,
  { index, concurrency }: QueuePlace,
  own: boolean,
): PreviewNode {
  const talos = spec.target.talosVersion;
  const needsTalos = talos !== undefined && !same(n.talosVersion, talos);
  const installer = needsTalos ? installerFor(spec.target, talos, n) : undefined;
  return {
    name: n.name,
    position: index + 1,
    round: Math.floor(index / concurrency) + 1,
    controlPlane: n.controlPlane,
    currentTalosVersion: n.talosVersion,
    currentKubernetesVersion: n.kubeletVersion,
    talosVersion: talos ?? n.talosVersion,
    kubernetesVersion: spec.target.kubernetesVersion ?? n.kubeletVersion,
    installerImage: installer && imageOf(installer),
    ownNode: own,
    ...nodeControls(n, installer),
  };
}

/** What a reviewer must see of a node beyond its versions: held or skipped, overridden, and a schematic (extensions) change. */
function nodeControls(
  n: PreviewNodeFacts,
  installer: ResolvedInstaller | { problem: string } | undefined,
): Pick<PreviewNode, 'hold' | 'installerOverride' | 'schematicChange'> {
  const hold = parseHold(n.hold);
  const to = installer && !('problem' in installer) ? installer.schematic : undefined;
  // The vanilla schematic and none both mean "no extensions": no change between them.
  const extensions = (s: string | undefined): string | undefined => (s === VANILLA_SCHEMATIC ? undefined : s);
  const changes = installer !== undefined && !('problem' in installer) && extensions(n.schematic) !== extensions(to);
  return {
    ...(hold ? { hold } : {}),
    ...(n.installerAnnotations ? { installerOverride: n.installerAnnotations } : {}),
    ...(changes ? { schematicChange: { from: n.schematic, to } } : {}),
  };
}

function describeTarget(spec: PatchPlanSpec): string {
  const parts = [
    spec.target.talosVersion && `Talos ${spec.target.talosVersion}`,
    spec.target.kubernetesVersion && `Kubernetes ${spec.target.kubernetesVersion}`,
  ];
  return parts.filter((p) => p).join(', ');
}

function previewWindow(spec: PatchPlanSpec, now: number): PreviewWindow {
  const w = windowState(spec.maintenance, now);
  return {
    open: w.open,
    ...(w.closesAt === undefined ? {} : { closesAt: iso(w.closesAt) }),
    ...(w.nextOpenAt === undefined ? {} : { nextOpenAt: iso(w.nextOpenAt) }),
    reason: w.reason,
  };
}

function estimate(spec: PatchPlanSpec, groups: readonly PreviewGroup[]): PreviewEstimate {
  const kube = spec.target.kubernetesVersion !== undefined;
  const talos = spec.target.talosVersion !== undefined;
  const typical =
    (talos ? TYPICAL_NODE_MS.drain + TYPICAL_NODE_MS.install + TYPICAL_NODE_MS.reboot : 0) +
    (kube ? TYPICAL_NODE_MS.kubernetes : 0);
  const worst =
    (talos ? durationMs(spec.drainTimeout) + durationMs(spec.rebootTimeout) : 0) +
    (kube ? durationMs(spec.kubernetesUpgradeTimeout) : 0);
  const delay = durationMs(spec.delayBetweenNodes);
  const rounds = groups.reduce((n, g) => n + g.rounds, 0);
  const prePulledRounds = talos && spec.prePull ? groups.reduce((n, g) => n + prePulledRoundsOf(g), 0) : 0;
  const pull = TYPICAL_NODE_MS.pull;
  return {
    rounds,
    prePulledRounds,
    perNodeTypicalMs: typical,
    pullTypicalMs: pull,
    perNodeWorstCaseMs: worst,
    delayBetweenNodesMs: delay,
    typicalMs:
      (rounds - prePulledRounds) * Math.max(typical, delay) + prePulledRounds * Math.max(typical - pull, delay),
    worstCaseMs: rounds * Math.max(worst, delay),
  };
}

/** Rounds after the group's first whose every node gets a Talos upgrade on the lifecycle flow. */
function prePulledRoundsOf(g: PreviewGroup): number {
  let n = 0;
  for (let round = 2; round <= g.rounds; round++) {
    const nodes = g.nodes.filter((x) => x.round === round);
    const lifecycle = (x: PreviewNode): boolean =>
      x.installerImage !== undefined &&
      x.currentTalosVersion !== undefined &&
      upgradeFlowFor(x.currentTalosVersion) === UpgradeFlow.Lifecycle;
    if (nodes.length > 0 && nodes.every(lifecycle)) n++;
  }
  return n;
}
