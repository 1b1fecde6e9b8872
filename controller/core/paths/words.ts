// The planner's words: nodes named (a few, the rest counted), the Kubernetes window of a Talos minor,
// and the sentence of each hop that a reviewer reads in preview and in the report.
import { someNames } from '../names.js';
import type { SupportRow } from '../support-matrix.js';
import type { PathNode } from './types.js';
import { minorOf, versionList } from './versions.js';

/** "control-plane node cp-0 runs" or "nodes w-0, w-1 run": the subject of a sentence about nodes. */
export function nodesRun(
  nodes: readonly PathNode[],
  verb: [singular: string, plural: string] = ['runs', 'run'],
): string {
  const [first] = nodes;
  if (nodes.length === 1 && first !== undefined)
    return `${first.controlPlane ? 'control-plane node' : 'node'} ${first.name} ${verb[0]}`;
  return `nodes ${someNames(
    nodes.map((n) => n.name),
    3,
  )} ${verb[1]}`;
}

/** "Talos 1.14 supports Kubernetes 1.33–1.37". */
const windowText = (row: SupportRow): string =>
  `Talos ${row.talos} supports Kubernetes ${row.kubernetes.min}–${row.kubernetes.max}`;

export interface TalosHopFacts {
  /** Versions of the nodes the hop moves. */
  from: readonly string[];
  to: string;
  /** The plan's Talos destination (the last Talos hop goes to it). */
  destination: string;
  /** The Kubernetes step this hop goes before, when that step is not supported before it: the verdict's reason. */
  beforeKubernetes?: { version: string; why: string } | undefined;
}

export function talosHopReason(f: TalosHopFacts): string {
  const purpose =
    f.to === f.destination
      ? ', the destination'
      : `, the latest ${minorOf(f.to) ?? f.to} release: Talos moves one minor version at a time towards ${f.destination}`;
  const before =
    f.beforeKubernetes === undefined
      ? ''
      : `; it goes before Kubernetes ${f.beforeKubernetes.version} because ${f.beforeKubernetes.why}`;
  return `Talos ${versionList(f.from)} → ${f.to}${purpose}${before}.`;
}

export interface KubernetesHopFacts {
  from: readonly string[];
  to: string;
  /** The plan's Kubernetes destination; undefined when Kubernetes moves only because Talos needs it. */
  destination: string | undefined;
  /** The row of the last Talos hop, whose window Kubernetes must reach when there is no destination. */
  lastTalos: SupportRow | undefined;
  /** Why this step goes before the next Talos hop, when one is left. */
  first?: { talos: string; row: SupportRow | undefined; supported: boolean } | undefined;
}

function kubernetesPurpose(f: KubernetesHopFacts): string {
  if (f.first !== undefined) {
    if (!f.first.supported && f.first.row !== undefined) return ` first: ${windowText(f.first.row)}`;
    return ` first: after Talos ${f.first.talos} the remaining steps would have no order that keeps every node supported`;
  }
  if (f.destination === undefined) {
    const window = f.lastTalos === undefined ? '' : `: ${windowText(f.lastTalos)}`;
    return `${window}, and Kubernetes moves one minor version at a time`;
  }
  return f.to === f.destination
    ? ', the destination'
    : `: Kubernetes moves one minor version at a time towards ${f.destination}`;
}

export function kubernetesHopReason(f: KubernetesHopFacts): string {
  return `Kubernetes ${versionList(f.from)} → ${f.to}${kubernetesPurpose(f)}.`;
}
