// Randomized property test of the upgrade-path planner (controller/core/paths, fast-check): any
// fleet of one to three nodes within the support matrix (a few outside it or on an unsupported pair),
// any destination, any subset of releases. Every path is replayed step by step against the matrix
// facts typed in again here and the one-minor rules, and compared with a brute-force breadth-first
// search over fleet states written here: its length is the shortest, its "no path" means the search
// finds none, its Kubernetes steps come first only when Talos first would not be shortest, and its
// intermediate versions are the latest patches of their minors.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { planUpgradePath } from '../../../controller/core/paths/plan-path.js';
import type { Hop, PathInput, PathNode } from '../../../controller/core/paths/types.js';

// Talos minor (1.x) → documented Kubernetes window (1.x minors) and the oldest Talos its installer takes.
const MATRIX: Record<number, { min: number; max: number; from: V }> = {
  10: { min: 28, max: 33, from: [8, 0] },
  11: { min: 29, max: 34, from: [9, 0] },
  12: { min: 30, max: 35, from: [10, 0] },
  13: { min: 31, max: 36, from: [11, 0] },
  14: { min: 33, max: 37, from: [12, 0] },
};
/** The matrix's stable default Kubernetes versions (1.14's is a pre-release). */
const DEFAULTS = ['v1.33.6', 'v1.34.1', 'v1.35.4', 'v1.36.3'];

/** [minor, patch] of a 1.x version. */
type V = [number, number];
const parse = (s: string): V => {
  const m = /^v1\.(\d+)\.(\d+)$/.exec(s);
  assert.ok(m, `test versions are v1.M.P: ${s}`);
  return [Number(m[1]), Number(m[2])];
};
const text = (v: V): string => `v1.${v[0]}.${v[1]}`;
const cmp = (a: V, b: V): number => a[0] - b[0] || a[1] - b[1];
const pairOk = (t: V, k: V): boolean => {
  const row = MATRIX[t[0]];
  return row !== undefined && k[0] >= row.min && k[0] <= row.max;
};

interface Fleet {
  talos: V[];
  kube: V[];
}
const key = (f: Fleet): string => `${f.talos.map(text).join()}|${f.kube.map(text).join()}`;
const fleetOk = (f: Fleet): boolean => f.talos.every((t, i) => pairOk(t, f.kube[i] ?? [0, 0]));

/** One hop applied by the rules, or why it is not allowed. */
function apply(f: Fleet, kind: Hop['kind'], to: V): Fleet | string {
  const current = kind === 'talos' ? f.talos : f.kube;
  const moved = current.filter((v) => cmp(v, to) < 0);
  if (moved.length === 0) return 'moves no node';
  if (moved.some((v) => to[0] - v[0] > 1)) return 'skips a minor';
  if (kind === 'talos') {
    const row = MATRIX[to[0]];
    if (row === undefined) return 'Talos outside the matrix';
    if (moved.some((v) => cmp(v, row.from) < 0)) return 'below the installer floor';
  }
  const next = current.map((v) => (cmp(v, to) < 0 ? to : v));
  const after = kind === 'talos' ? { talos: next, kube: f.kube } : { talos: f.talos, kube: next };
  return fleetOk(after) ? after : 'leaves a node on an unsupported pair';
}

interface Problem {
  start: Fleet;
  talosTo: V | undefined;
  kubeTo: V | undefined;
  talosReleases: V[];
  kubeVersions: V[];
}

const atGoal = (p: Problem, f: Fleet): boolean =>
  (p.talosTo === undefined || f.talos.every((t) => cmp(t, p.talosTo ?? t) === 0)) &&
  (p.kubeTo === undefined || f.kube.every((k) => cmp(k, p.kubeTo ?? k) === 0));

/** Fewest hops from `from` to the goal (Talos only when a Talos destination is named), or undefined. */
function shortest(p: Problem, from: Fleet, limit = Infinity): number | undefined {
  if (!fleetOk(from)) return undefined;
  const moves: [Hop['kind'], V][] = [
    ...(p.talosTo === undefined ? [] : p.talosReleases.map((v): [Hop['kind'], V] => ['talos', v])),
    ...p.kubeVersions.map((v): [Hop['kind'], V] => ['kubernetes', v]),
  ];
  const seen = new Set([key(from)]);
  let layer = [from];
  for (let depth = 0; layer.length > 0 && depth <= limit; depth++) {
    if (layer.some((f) => atGoal(p, f))) return depth;
    const next: Fleet[] = [];
    for (const f of layer) {
      for (const [kind, to] of moves) {
        const g = apply(f, kind, to);
        if (typeof g === 'string' || seen.has(key(g))) continue;
        seen.add(key(g));
        next.push(g);
      }
    }
    layer = next;
  }
  return undefined;
}

/** The newest patch of `minor` among `versions`. */
const latest = (versions: readonly V[], minor: number): V | undefined =>
  versions
    .filter((v) => v[0] === minor)
    .sort(cmp)
    .at(-1);

/** Replays the hops, asserting each against the rules; returns the states before each hop and the end. */
function replay(p: Problem, hops: readonly Hop[]): Fleet[] {
  const states = [p.start];
  for (const [n, hop] of hops.entries()) {
    const to = parse(hop.to);
    const listed = hop.kind === 'talos' ? p.talosReleases : p.kubeVersions;
    assert.ok(
      listed.some((v) => cmp(v, to) === 0),
      `hop ${n} (${hop.kind} ${hop.to}) uses a version that is not available`,
    );
    const after = apply(states.at(-1) ?? p.start, hop.kind, to);
    if (typeof after === 'string') assert.fail(`hop ${n} (${hop.kind} ${hop.to}) ${after}`);
    assert.match(hop.reason, /^(Talos|Kubernetes) .+\.$/);
    assert.ok(hop.reason.includes(hop.to), `the reason names the version: ${hop.reason}`);
    states.push(after);
  }
  return states;
}

/** Intermediate hops go to the latest patch of their minor; the last of each kind to the destination. */
function assertVersionsPicked(p: Problem, hops: readonly Hop[]): void {
  for (const kind of ['talos', 'kubernetes'] as const) {
    const of = hops.filter((h) => h.kind === kind).map((h) => parse(h.to));
    const destination = kind === 'talos' ? p.talosTo : p.kubeTo;
    const list = kind === 'talos' ? p.talosReleases : p.kubeVersions;
    for (const [n, v] of of.entries()) {
      const last = n === of.length - 1;
      if (last && destination !== undefined)
        assert.deepEqual(v, destination, `the last ${kind} hop goes to the destination`);
      else assert.deepEqual(v, latest(list, v[0]), `${kind} ${text(v)} is the latest available ${v[0]}`);
    }
  }
}

/** Without a Kubernetes destination, Kubernetes moves only to the lower bound of the destination Talos (the table's bounds rise). */
function assertKubernetesOnlyAsNeeded(p: Problem, end: Fleet): void {
  if (p.kubeTo !== undefined) return;
  const need = p.talosTo === undefined ? undefined : MATRIX[p.talosTo[0]]?.min;
  end.kube.forEach((k, i) => {
    const before = p.start.kube[i] ?? k;
    if (cmp(k, before) !== 0)
      assert.equal(
        k[0],
        need,
        `node ${i}'s kubelet moved from ${text(before)} to ${text(k)}, beyond what Talos needs (1.${String(need)})`,
      );
  });
}

/** Kubernetes goes first only when the next Talos hop there is not allowed or would not be shortest. */
function assertTalosFirst(p: Problem, hops: readonly Hop[], states: readonly Fleet[]): void {
  for (const [n, hop] of hops.entries()) {
    const nextTalos = hops.slice(n).find((h) => h.kind === 'talos');
    if (hop.kind !== 'kubernetes' || nextTalos === undefined) continue;
    const instead = apply(states[n] ?? p.start, 'talos', parse(nextTalos.to));
    if (typeof instead === 'string') continue;
    const rest = shortest(p, instead, hops.length - n - 1);
    assert.notEqual(
      rest,
      hops.length - n - 1,
      `hop ${n}: Talos ${nextTalos.to} could have gone before Kubernetes ${hop.to} and still been shortest`,
    );
  }
}

const TALOS = [10, 11, 12, 13, 14].flatMap((m) => [0, 4].map((patch): V => [m, patch]));
const OUTSIDE: V[] = [
  [9, 4],
  [15, 0],
];
const KUBE = Array.from({ length: 10 }, (_, i) => 28 + i).flatMap((m) => [0, 5].map((patch): V => [m, patch]));

const arbNode = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.constantFrom(...TALOS).chain((t) => {
      const row = MATRIX[t[0]] ?? { min: 28, max: 37 };
      return fc.tuple(fc.constant(t), fc.constantFrom(...KUBE.filter((k) => k[0] >= row.min && k[0] <= row.max)));
    }),
  },
  // Outside the matrix, or on an unsupported pair already.
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...TALOS, ...OUTSIDE), fc.constantFrom(...KUBE)) },
);

const arbSubset = <T>(all: readonly T[]): fc.Arbitrary<T[]> =>
  fc
    .oneof({ weight: 4, arbitrary: fc.constant([...all]) }, { weight: 1, arbitrary: fc.subarray([...all]) })
    .map((list) => [...list]);

/** Mostly a destination at or above every node (a path may exist), sometimes any, outside the matrix, or none. */
const arbDestinations = (nodes: readonly [V, V][]) => {
  const topTalos = nodes
    .map(([t]) => t)
    .sort(cmp)
    .at(-1) ?? [10, 0];
  const topKube = nodes
    .map(([, k]) => k)
    .sort(cmp)
    .at(-1) ?? [28, 0];
  const upTalos = TALOS.filter((v) => cmp(v, topTalos) >= 0);
  const upKube = KUBE.filter((v) => cmp(v, topKube) >= 0);
  return fc.record({
    talosTo: fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom(...(upTalos.length > 0 ? upTalos : TALOS)) },
      { weight: 2, arbitrary: fc.constantFrom(...TALOS) },
      { weight: 1, arbitrary: fc.constantFrom(...OUTSIDE) },
      { weight: 3, arbitrary: fc.constant(undefined) },
    ),
    kubeTo: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...(upKube.length > 0 ? upKube : KUBE)) },
      { weight: 1, arbitrary: fc.constantFrom(...KUBE) },
      { weight: 4, arbitrary: fc.constant(undefined) },
    ),
  });
};

const arbProblem = fc.array(arbNode, { minLength: 1, maxLength: 3 }).chain((nodes) =>
  fc.record({
    nodes: fc.constant(nodes),
    controlPlane: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
    destination: arbDestinations(nodes),
    talosReleases: arbSubset([...TALOS, ...OUTSIDE]),
    kubeVersions: fc.oneof({ weight: 3, arbitrary: arbSubset(KUBE) }, { weight: 1, arbitrary: fc.constant(undefined) }),
  }),
);

type Generated = typeof arbProblem extends fc.Arbitrary<infer T> ? T : never;

function inputOf(g: Generated): { input: PathInput; problem: Problem } {
  const { talosTo, kubeTo } = g.destination;
  const nodes: PathNode[] = g.nodes.map(([t, k], i) => ({
    name: `n-${i}`,
    controlPlane: g.controlPlane[i] ?? false,
    talosVersion: text(t),
    kubernetesVersion: text(k),
  }));
  // Without a list, the planner may use the destination and the matrix's stable defaults.
  const kubeVersions = g.kubeVersions ?? [...DEFAULTS.map(parse), ...(kubeTo === undefined ? [] : [kubeTo])];
  const problem: Problem = {
    start: { talos: g.nodes.map(([t]) => t), kube: g.nodes.map(([, k]) => k) },
    talosTo,
    kubeTo,
    talosReleases: g.talosReleases,
    kubeVersions,
  };
  const input: PathInput = {
    nodes,
    destination: { talosVersion: talosTo && text(talosTo), kubernetesVersion: kubeTo && text(kubeTo) },
    talosReleases: g.talosReleases.map(text),
    kubernetesVersions: g.kubeVersions?.map(text),
  };
  return { input, problem };
}

describe('core/paths: planUpgradePath (property, against a breadth-first search)', function () {
  it('every path is valid step by step, ends at the destination, is shortest and puts Talos first when it can; every "no path" has none', function () {
    const seen = { paths: 0, longPaths: 0, none: 0 };
    fc.assert(
      fc.property(arbProblem, (g) => {
        const { input, problem } = inputOf(g);
        const result = planUpgradePath(input);
        const best = shortest(problem, problem.start);
        if (!result.ok) {
          seen.none++;
          assert.equal(
            best,
            undefined,
            `the planner says "${result.reason}", but a path of ${String(best)} hops exists`,
          );
          assert.ok(result.reason.length > 0);
          return;
        }
        seen.paths++;
        if (result.hops.length >= 4) seen.longPaths++;
        const states = replay(problem, result.hops);
        const end = states.at(-1) ?? problem.start;
        assert.ok(fleetOk(problem.start), 'a path starts from a supported fleet');
        assert.ok(atGoal(problem, end), 'the path ends at the destination');
        if (problem.talosTo === undefined)
          assert.deepEqual(end.talos, problem.start.talos, 'without a Talos destination Talos stays');
        assert.equal(result.hops.length, best, 'the path is as short as the search finds');
        assertVersionsPicked(problem, result.hops);
        assertKubernetesOnlyAsNeeded(problem, end);
        assertTalosFirst(problem, result.hops, states);
      }),
      { numRuns: 3000 },
    );
    // The generator reaches both answers, and paths of several hops.
    assert.ok(seen.paths > 600 && seen.none > 600 && seen.longPaths > 200, JSON.stringify(seen));
  });
});
