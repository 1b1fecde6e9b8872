// Upgrade paths (issue 46): from the versions the nodes run to a destination Talos and/or Kubernetes
// version, every hop in order, each within the support matrix, or "no path" and why.
//
// - Talos goes one minor per hop, never skipping one and never down, to the latest available patch
//   of each minor in between and then to the destination; each hop respects its installer's
//   upgradeFromAtLeast. A Talos hop moves every node below it to that version; nodes at or beyond
//   it are not touched, so a fleet on several minors is taken lowest first (chains.ts).
// - Kubernetes goes one minor per hop, never down: to the destination when one is named, else only
//   as far as the Talos hops need (the lowest minor the destination Talos, and every Talos in
//   between, supports). Which Kubernetes patch a hop takes: the latest of that minor among
//   `kubernetesVersions` when the caller gives the available versions; without them, the support
//   matrix's default Kubernetes of that minor (stable ones only), and "no path" naming the minor
//   when there is none, since a version nobody checked exists must not be invented. The
//   destination is taken as named; with a list, it must be in it.
// - Only versions from the lists are used: the destination Talos must be among `talosReleases`
//   (when a hop goes to it), and so must every Talos in between.
// - Before and after every hop, every node's Talos × Kubernetes pair is supported by the matrix
//   (kubernetesSupported: the documented window), starting with the fleet as it is.
// - Minimal: each list of steps is forced (one per minor), so the number of hops is fixed once the
//   two lists are; order.ts interleaves them by its rule (Talos first unless the next Talos needs a
//   newer Kubernetes), and says there is no order when none keeps every node supported.
// - The controlPlane flag does not change the path: a Kubernetes hop upgrades the control plane and
//   then every kubelet to one version, and a Talos hop every node; the order inside a hop is the
//   rollout's. It names control-plane nodes in the reasons.
//
// Pure: no clock, no I/O; the caller gives the releases (feed or registry tags, already filtered).
import semver from 'semver';
import { SUPPORT_MATRIX, kubernetesSupported, supportRow } from '../support-matrix.js';
import { advance, kubernetesChain, kubernetesNeeded, talosChain, type KubernetesEnd } from './chains.js';
import { orderSteps, type Move } from './order.js';
import type { Hop, PathDestination, PathInput, PathNode, PathResult } from './types.js';
import { kubernetesHopReason, nodesRun, talosHopReason } from './words.js';
import { compareMinors, minorOf, versionList } from './versions.js';

const MATRIX_SPAN = `Talos ${SUPPORT_MATRIX[0]?.talos ?? ''}–${SUPPORT_MATRIX.at(-1)?.talos ?? ''}`;

const supportedPair = (talos: string, kubernetes: string): boolean => {
  const v = kubernetesSupported(talos, kubernetes);
  return 'ok' in v && v.ok;
};
const verdictReason = (talos: string, kubernetes: string): string => {
  const v = kubernetesSupported(talos, kubernetes);
  return 'reason' in v ? v.reason : '';
};

function destinationRefusal(d: PathDestination): string | undefined {
  if (d.talosVersion !== undefined && semver.valid(d.talosVersion) === null)
    return `Talos destination "${d.talosVersion}" is not a version such as "v1.13.2"`;
  if (d.kubernetesVersion !== undefined && semver.valid(d.kubernetesVersion) === null) {
    return `Kubernetes destination "${d.kubernetesVersion}" is not a version such as "v1.34.1"`;
  }
  if (d.talosVersion === undefined) return undefined;
  const row = supportRow(d.talosVersion);
  if (row === undefined)
    return `Talos ${d.talosVersion} is not in the support matrix (${MATRIX_SPAN}): no path to it can be checked`;
  if (d.kubernetesVersion === undefined || supportedPair(d.talosVersion, d.kubernetesVersion)) return undefined;
  const old = compareMinors(minorOf(d.kubernetesVersion) ?? '', row.kubernetes.min) < 0;
  return `Kubernetes ${d.kubernetesVersion} is too ${old ? 'old' : 'new'} for Talos ${d.talosVersion}: Talos ${row.talos} supports Kubernetes ${row.kubernetes.min} to ${row.kubernetes.max}, so no node may end on that pair`;
}

function nodeRefusal(nodes: readonly PathNode[]): string | undefined {
  const invalid = nodes.filter(
    (n) => semver.valid(n.talosVersion) === null || semver.valid(n.kubernetesVersion) === null,
  );
  if (invalid.length > 0)
    return `${nodesRun(invalid, ['reports', 'report'])} a Talos or Kubernetes version that is no version (${invalid.map((n) => `${n.talosVersion} / ${n.kubernetesVersion}`).join(', ')})`;
  const unknown = nodes.filter((n) => supportRow(n.talosVersion) === undefined);
  if (unknown.length > 0) {
    return `${nodesRun(unknown)} Talos ${versionList(unknown.map((n) => n.talosVersion))}, which the support matrix (${MATRIX_SPAN}) does not cover`;
  }
  const unsupported = nodes.filter((n) => !supportedPair(n.talosVersion, n.kubernetesVersion));
  const [first] = unsupported;
  if (first === undefined) return undefined;
  const others =
    unsupported.length > 1 ? ` (and ${unsupported.length - 1} more node${unsupported.length > 2 ? 's' : ''})` : '';
  return `${nodesRun([first])} an unsupported pair already${others}: ${verdictReason(first.talosVersion, first.kubernetesVersion)}`;
}

function downgradeRefusal(nodes: readonly PathNode[], d: PathDestination): string | undefined {
  const { talosVersion: talos, kubernetesVersion: kube } = d;
  const aboveTalos = talos === undefined ? [] : nodes.filter((n) => semver.gt(n.talosVersion, talos));
  if (aboveTalos.length > 0) {
    return `Talos ${talos} would be a downgrade: ${nodesRun(aboveTalos)} Talos ${versionList(aboveTalos.map((n) => n.talosVersion))}, and a path only goes up`;
  }
  const aboveKube = kube === undefined ? [] : nodes.filter((n) => semver.gt(n.kubernetesVersion, kube));
  if (aboveKube.length > 0) {
    return `Kubernetes ${kube} would be a downgrade: ${nodesRun(aboveKube)} Kubernetes ${versionList(aboveKube.map((n) => n.kubernetesVersion))}, and Kubernetes cannot be downgraded`;
  }
  return undefined;
}

/** Without a Talos destination every node keeps its Talos, which must then support the Kubernetes destination. */
function keptTalosRefusal(nodes: readonly PathNode[], d: PathDestination): string | undefined {
  const kube = d.kubernetesVersion;
  if (d.talosVersion !== undefined || kube === undefined) return undefined;
  const first = nodes.find((n) => !supportedPair(n.talosVersion, kube));
  if (first === undefined) return undefined;
  return `no Talos destination is named, so ${nodesRun([first], ['keeps', 'keep'])} Talos ${first.talosVersion}, and ${verdictReason(first.talosVersion, kube)}`;
}

/** The fleet's versions after each number of steps: states[k][node]. */
function statesOf(start: readonly string[], steps: readonly string[]): string[][] {
  const states = [[...start]];
  for (const step of steps) states.push(advance(states.at(-1) ?? [], step));
  return states;
}

interface Walk {
  nodes: readonly PathNode[];
  destination: PathDestination;
  talos: { steps: string[]; states: string[][] };
  kube: { steps: string[]; states: string[][] };
  supported: (i: number, j: number) => boolean;
}

/** The first node on an unsupported pair at (i, j), with the matrix's reason. */
function unsupportedAt(w: Walk, i: number, j: number): string {
  const t = w.talos.states[i] ?? [];
  const k = w.kube.states[j] ?? [];
  const index = w.nodes.findIndex((_, n) => !supportedPair(t[n] ?? '', k[n] ?? ''));
  const node = w.nodes[index];
  return node === undefined
    ? ''
    : `${nodesRun([node], ['would run', 'would run'])} Kubernetes ${k[index]} on Talos ${t[index]} (${verdictReason(t[index] ?? '', k[index] ?? '')})`;
}

function stuckReason(w: Walk, at: { talos: number; kubernetes: number }): string {
  const { talos: i, kubernetes: j } = at;
  const blocked: string[] = [];
  const nextTalos = w.talos.steps[i];
  const nextKube = w.kube.steps[j];
  if (nextTalos !== undefined) blocked.push(`Talos ${nextTalos} next: ${unsupportedAt(w, i + 1, j)}`);
  if (nextKube !== undefined) blocked.push(`Kubernetes ${nextKube} next: ${unsupportedAt(w, i, j + 1)}`);
  const total = `${w.talos.steps.length} Talos and ${w.kube.steps.length} Kubernetes steps`;
  return `no order of the ${total} keeps every node on a supported pair: after ${i} Talos and ${j} Kubernetes steps, ${blocked.join('; ')}`;
}

const movedFrom = (before: readonly string[], after: readonly string[]): string[] =>
  before.filter((v, n) => v !== after[n]);

function talosHop(w: Walk, i: number, j: number): Hop {
  const to = w.talos.steps[i] ?? '';
  const nextKube = w.kube.steps[j];
  const blocked = nextKube !== undefined && !w.supported(i, j + 1);
  const reason = talosHopReason({
    from: movedFrom(w.talos.states[i] ?? [], w.talos.states[i + 1] ?? []),
    to,
    destination: w.destination.talosVersion ?? to,
    beforeKubernetes: blocked ? { version: nextKube, why: unsupportedAt(w, i, j + 1) } : undefined,
  });
  return { kind: 'talos', to, reason };
}

function kubernetesHop(w: Walk, i: number, j: number): Hop {
  const to = w.kube.steps[j] ?? '';
  const nextTalos = w.talos.steps[i];
  const reason = kubernetesHopReason({
    from: movedFrom(w.kube.states[j] ?? [], w.kube.states[j + 1] ?? []),
    to,
    destination: w.destination.kubernetesVersion,
    lastTalos: supportRow(w.talos.steps.at(-1) ?? w.destination.talosVersion ?? ''),
    first:
      nextTalos === undefined
        ? undefined
        : { talos: nextTalos, row: supportRow(nextTalos), supported: w.supported(i + 1, j) },
  });
  return { kind: 'kubernetes', to, reason };
}

function hopsOf(w: Walk, moves: readonly Move[]): Hop[] {
  const hops: Hop[] = [];
  let [i, j] = [0, 0];
  for (const move of moves) {
    hops.push(move === 'talos' ? talosHop(w, i, j) : kubernetesHop(w, i, j));
    if (move === 'talos') i++;
    else j++;
  }
  return hops;
}

function refusal(input: PathInput): string | undefined {
  const { nodes, destination: d } = input;
  return destinationRefusal(d) ?? nodeRefusal(nodes) ?? downgradeRefusal(nodes, d) ?? keptTalosRefusal(nodes, d);
}

/** The hops from the nodes' versions to the destination, or why there is no path. */
export function planUpgradePath(input: PathInput): PathResult {
  const refused = refusal(input);
  if (refused !== undefined) return { ok: false, reason: refused };
  const { nodes, destination: d } = input;
  const talos = talosChain(nodes, d.talosVersion, input.talosReleases);
  if (!talos.ok) return talos;
  const needed = d.kubernetesVersion === undefined ? kubernetesNeeded(nodes, talos.steps) : undefined;
  const end: KubernetesEnd | undefined =
    d.kubernetesVersion !== undefined
      ? { version: d.kubernetesVersion }
      : needed === undefined
        ? undefined
        : { minor: needed };
  const kube = kubernetesChain(nodes, end, input.kubernetesVersions);
  if (!kube.ok) return kube;
  const talosStates = statesOf(
    nodes.map((n) => n.talosVersion),
    talos.steps,
  );
  const kubeStates = statesOf(
    nodes.map((n) => n.kubernetesVersion),
    kube.steps,
  );
  const supported = (i: number, j: number): boolean => {
    const t = talosStates[i] ?? [];
    const k = kubeStates[j] ?? [];
    return nodes.every((_, n) => supportedPair(t[n] ?? '', k[n] ?? ''));
  };
  const walk: Walk = {
    nodes,
    destination: d,
    talos: { steps: talos.steps, states: talosStates },
    kube: { steps: kube.steps, states: kubeStates },
    supported,
  };
  const order = orderSteps(talos.steps.length, kube.steps.length, supported);
  if (!order.ok) return { ok: false, reason: stuckReason(walk, order.stuck) };
  return { ok: true, hops: hopsOf(walk, order.moves) };
}
