// The steps of each kind on their own, before they are interleaved (order.ts). With a minimal number
// of hops each list is forced: Talos takes every minor from the lowest node's to the destination's
// (the latest available patch of each minor in between, then the destination itself), Kubernetes
// every minor from the lowest kubelet's to its end (the latest available patch of each minor in
// between, then the destination, or without one the minor the Talos steps need).
//
// A step moves every node below it and leaves the nodes at or beyond it alone. A fleet on several
// Talos minors is therefore taken lowest first: the first steps move only the lowest nodes, and the
// others join as the steps reach their minor, so no node ever skips a minor and none goes down.
import semver from 'semver';
import { SUPPORT_MATRIX, supportRow } from '../support-matrix.js';
import type { PathNode } from './types.js';
import { nodesRun } from './words.js';
import {
  compareMinors,
  includesVersion,
  latestOfMinor,
  lowest,
  minorOf,
  minorsAfter,
  versionList,
} from './versions.js';

export type Chain = { ok: true; steps: string[] } | { ok: false; reason: string };

/** Versions after a step: those below it move to it, the others stay. */
export const advance = (versions: readonly string[], step: string): string[] =>
  versions.map((v) => (semver.lt(v, step) ? step : v));

/** The Talos steps to `destination` (none when it is undefined or every node is there). */
export function talosChain(
  nodes: readonly PathNode[],
  destination: string | undefined,
  releases: readonly string[],
): Chain {
  if (destination === undefined) return { ok: true, steps: [] };
  const below = nodes.filter((n) => semver.lt(n.talosVersion, destination)).map((n) => n.talosVersion);
  if (below.length === 0) return { ok: true, steps: [] };
  const from = lowest(below);
  const steps: string[] = [];
  for (const minor of minorsAfter(minorOf(from) ?? '', minorOf(destination) ?? '').slice(0, -1)) {
    const latest = latestOfMinor(releases, minor);
    if (latest === undefined) {
      return {
        ok: false,
        reason: `no Talos ${minor} release is available, and Talos moves one minor version at a time from ${from} to ${destination}`,
      };
    }
    steps.push(latest);
  }
  if (!includesVersion(releases, destination))
    return { ok: false, reason: `Talos ${destination} is not among the available Talos releases` };
  steps.push(destination);
  const refused = installerRefusal(nodes, steps);
  return refused === undefined ? { ok: true, steps } : { ok: false, reason: refused };
}

/**
 * A step whose installer refuses a node it would move (MinimumHostUpgradeVersion). With one minor
 * per step and today's table (every minor accepts hosts from two minors back) this never happens;
 * it is checked so that a future row cannot be crossed silently.
 */
function installerRefusal(nodes: readonly PathNode[], steps: readonly string[]): string | undefined {
  let current = nodes.map((n) => n.talosVersion);
  for (const step of steps) {
    const floor = supportRow(step)?.upgradeFromAtLeast;
    const refused = nodes.filter((_, i) => {
      const v = current[i] ?? '';
      return floor !== undefined && semver.lt(v, step) && semver.lt(v, floor);
    });
    if (floor !== undefined && refused.length > 0) {
      const versions = versionList(refused.map((n) => current[nodes.indexOf(n)] ?? ''));
      return `the Talos ${step} installer refuses hosts older than v${floor}, and ${nodesRun(refused, ['would run', 'would run'])} ${versions} before that step`;
    }
    current = advance(current, step);
  }
  return undefined;
}

/**
 * The Kubernetes minor the Talos steps need when no Kubernetes destination is named: the highest
 * lower bound of the Talos minors a node passes through, where its kubelet is below it.
 */
export function kubernetesNeeded(nodes: readonly PathNode[], talosSteps: readonly string[]): string | undefined {
  let needed: string | undefined;
  for (const n of nodes) {
    let talos = n.talosVersion;
    let min = supportRow(talos)?.kubernetes.min ?? '0.0';
    for (const step of talosSteps.filter((s) => semver.lt(talos, s))) {
      talos = step;
      const stepMin = supportRow(step)?.kubernetes.min ?? min;
      if (compareMinors(stepMin, min) > 0) min = stepMin;
    }
    const below = compareMinors(min, minorOf(n.kubernetesVersion) ?? '') > 0;
    if (below && (needed === undefined || compareMinors(min, needed) > 0)) needed = min;
  }
  return needed;
}

/** Where Kubernetes ends: a named version, or the latest available patch of a needed minor. */
export type KubernetesEnd = { version: string } | { minor: string };

const MATRIX_DEFAULTS = SUPPORT_MATRIX.map((r) => `v${r.defaultKubernetes}`).filter(
  (v) => semver.prerelease(v) === null,
);

function missingKubernetes(minor: string, from: string, to: string, listed: boolean): string {
  const why = `Kubernetes moves one minor version at a time from ${from} to ${to}`;
  if (listed) return `no Kubernetes ${minor} version is among the available Kubernetes versions, and ${why}`;
  return `no Kubernetes ${minor} version is known, and ${why}: give the available Kubernetes versions (without them only the support matrix's default versions, ${MATRIX_DEFAULTS.join(', ')}, are used)`;
}

/** The Kubernetes steps to `end` (none when it is undefined or every kubelet is there). */
export function kubernetesChain(
  nodes: readonly PathNode[],
  end: KubernetesEnd | undefined,
  available: readonly string[] | undefined,
): Chain {
  if (end === undefined) return { ok: true, steps: [] };
  const named = 'version' in end;
  const endMinor = named ? (minorOf(end.version) ?? '') : end.minor;
  const current = nodes.map((n) => n.kubernetesVersion);
  const below = current.filter((v) =>
    named ? semver.lt(v, end.version) : compareMinors(minorOf(v) ?? '', endMinor) < 0,
  );
  if (below.length === 0) return { ok: true, steps: [] };
  const from = lowest(below);
  const minors = minorsAfter(minorOf(from) ?? '', endMinor);
  if (!named) return minorSteps(minors, { available, from, to: `a ${endMinor} version` });
  // A named end is the last step itself, after the latest patch of each minor before its own.
  const chain = minorSteps(minors.slice(0, -1), { available, from, to: end.version });
  if (!chain.ok) return chain;
  if (available !== undefined && !includesVersion(available, end.version)) {
    return { ok: false, reason: `Kubernetes ${end.version} is not among the available Kubernetes versions` };
  }
  return { ok: true, steps: [...chain.steps, end.version] };
}

/** Where a Kubernetes chain goes: from the lowest kubelet to the end (as its messages name it), over these versions. */
interface KubernetesSpan {
  available: readonly string[] | undefined;
  from: string;
  to: string;
}

/** The latest available patch of each minor in turn, or why one of them has none. */
function minorSteps(minors: readonly string[], { available, from, to }: KubernetesSpan): Chain {
  const steps: string[] = [];
  for (const minor of minors) {
    const picked = latestOfMinor(available ?? MATRIX_DEFAULTS, minor);
    if (picked === undefined) return { ok: false, reason: missingKubernetes(minor, from, to, available !== undefined) };
    steps.push(picked);
  }
  return { ok: true, steps };
}
