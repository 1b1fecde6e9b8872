// Randomized property test of the pure plan scheduler (fast-check): any fleet, groups, order,
// concurrency, failures, retries and clock. A small simulation applies each decision, completes or
// fails running jobs at random and deletes failed jobs; an independent check of every state
// asserts the invariants: per-group concurrency, strict group order, one live job per node, a
// node's Lease before its PatchJob, and the failure policy triggering at exactly maxFailures. The
// controller may die in a scheduling pass between its Leases and its PatchJobs.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { patchPlanSpec, type PatchPlanStatus } from '../../../schemas/patchplan.js';
import { afterPreflight, decidePlan } from '../../../controller/core/plan/decide.js';
import type {
  NewJob,
  PlanAction,
  PlanJobFacts,
  PlanLeaseFacts,
  PlanNodeFacts,
  PlanObservation,
} from '../../../controller/core/plan/types.js';

const T0 = Date.parse('2026-12-01T00:00:00Z');

interface World {
  nodes: PlanNodeFacts[];
  spec: ReturnType<typeof patchPlanSpec.parse>;
  generation: number;
  status: PatchPlanStatus;
  jobs: Map<string, PlanJobFacts>;
  leases: PlanLeaseFacts[];
  now: number;
  /** Nodes whose job was deleted after failing: they may be scheduled once more. */
  retried: Set<string>;
  everScheduled: Map<string, number>;
  failedTotal: number;
  /** The Halt budget was reached at some point (Halt is terminal, even if a failed job is retried later). */
  haltReached: boolean;
  createdAfterHalt: boolean;
  /** The next scheduling pass dies after its Leases and this many of its PatchJobs, before its status write. */
  crashAfterJobs: number | undefined;
}

const arbPlan = fc.record({
  cp: fc.integer({ min: 0, max: 3 }),
  workers: fc.integer({ min: 1, max: 12 }),
  zones: fc.integer({ min: 1, max: 3 }),
  order: fc.constantFrom(
    ['controlPlane', 'workers'],
    ['controlPlane', 'zone-a', 'workers'],
    ['zone-a', 'zone-b', 'workers'],
    ['workers'],
  ),
  concurrency: fc.record({
    controlPlane: fc.integer({ min: 1, max: 2 }),
    workers: fc.integer({ min: 1, max: 4 }),
    'zone-a': fc.integer({ min: 1, max: 3 }),
    'zone-b': fc.integer({ min: 1, max: 3 }),
  }),
  policy: fc.constantFrom('Halt', 'Pause'),
  maxFailures: fc.integer({ min: 0, max: 3 }),
});

type Event =
  | { kind: 'finish'; pick: number; fail: boolean; released: boolean }
  | { kind: 'retry'; pick: number }
  | { kind: 'resume' }
  | { kind: 'tick'; ms: number }
  | { kind: 'pass' }
  | { kind: 'crash'; jobs: number };
const arbEvents = fc.array(
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('finish' as const),
        pick: fc.nat(),
        fail: fc.boolean(),
        released: fc.boolean(),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('retry' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('resume' as const) }) },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 120_000 }) }),
    },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('pass' as const) }) },
    // The controller dies in a scheduling pass between its Leases and (some of) its PatchJobs.
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('crash' as const), jobs: fc.integer({ min: 0, max: 3 }) }) },
  ),
  { maxLength: 120 },
);

type PlanInput = typeof arbPlan extends fc.Arbitrary<infer T> ? T : never;

function world(p: PlanInput): World {
  const nodes: PlanNodeFacts[] = [];
  for (let i = 0; i < p.cp; i++)
    nodes.push({ name: `cp-${i}`, labels: {}, controlPlane: true, talosVersion: 'v1.12.4' });
  for (let i = 0; i < p.workers; i++)
    nodes.push({
      name: `w-${i}`,
      labels: { zone: String.fromCharCode(97 + (i % p.zones)) },
      controlPlane: false,
      talosVersion: 'v1.12.4',
    });
  const groups: Record<string, unknown> = {
    controlPlane: { concurrency: p.concurrency.controlPlane },
    workers: { concurrency: p.concurrency.workers },
    'zone-a': { selector: { matchLabels: { zone: 'a' } }, concurrency: p.concurrency['zone-a'] },
    'zone-b': { selector: { matchLabels: { zone: 'b' } }, concurrency: p.concurrency['zone-b'] },
  };
  const spec = patchPlanSpec.parse({
    target: { talosVersion: 'v1.13.2' },
    groups,
    strategy: { order: p.order },
    failurePolicy: { type: p.policy, maxFailures: p.maxFailures },
    delayBetweenNodes: '0s',
    talosConfig: { secretRef: { name: 'talos' } },
  });
  return {
    nodes,
    spec,
    generation: 1,
    status: {},
    jobs: new Map(),
    leases: [],
    now: T0,
    retried: new Set(),
    everScheduled: new Map(),
    failedTotal: 0,
    haltReached: false,
    createdAfterHalt: false,
    crashAfterJobs: undefined,
  };
}

const obs = (w: World): PlanObservation => ({
  now: w.now,
  plan: { name: 'p', uid: 'u', generation: w.generation, spec: w.spec, status: w.status },
  nodes: w.nodes,
  jobs: [...w.jobs.values()],
  leases: w.leases,
});

/** Group of a node, computed here independently of the scheduler: first listed group it matches. */
function groupOf(w: World, node: PlanNodeFacts): string | undefined {
  return w.spec.strategy.order.find((g) => {
    if (g === 'controlPlane') return node.controlPlane;
    if (g === 'workers') return !node.controlPlane;
    const zone = (w.spec.groups[g]?.selector?.matchLabels ?? {}).zone;
    return zone !== undefined && node.labels.zone === zone;
  });
}

function addJob(w: World, j: NewJob): void {
  const node = j.spec.nodeName;
  const n = w.nodes.find((x) => x.name === node);
  assert.ok(n);
  const group = groupOf(w, n);
  assert.equal(j.spec.group, group, `node ${node} scheduled by its first matching group`);
  assert.ok(!w.jobs.has(j.name), `node ${node} has one live job`);
  assert.ok(
    w.leases.some((l) => l.holderIdentity === j.name),
    `node ${node}: its Lease exists before its PatchJob`,
  );
  const times = (w.everScheduled.get(node) ?? 0) + 1;
  assert.ok(times === 1 || w.retried.has(node), `node ${node} patched again without a retry`);
  w.everScheduled.set(node, times);
  // Strict group order: every node of every earlier group has finished.
  const gi = w.spec.strategy.order.indexOf(group ?? '');
  for (const other of w.nodes) {
    const og = groupOf(w, other);
    if (og === undefined || w.spec.strategy.order.indexOf(og) >= gi) continue;
    const phase = w.jobs.get(`p-${other.name}`)?.phase;
    assert.ok(
      phase === 'Completed' || phase === 'Failed',
      `${node} (${group}) started before ${other.name} (${og}) finished (${phase ?? 'no job'}; jobs ${JSON.stringify([...w.jobs.values()])})`,
    );
  }
  if (w.haltReached) w.createdAfterHalt = true;
  w.jobs.set(j.name, { name: j.name, nodeName: node, group: group ?? '', phase: 'Pending', completionTime: undefined });
}

type ScheduleNodes = Extract<PlanAction, { type: 'scheduleNodes' }>;

/**
 * A scheduling round: releases, then Leases, then PatchJobs. Returns true when the pass died
 * (w.crashAfterJobs was set) after its Leases and some of its PatchJobs, before its status write.
 */
function scheduleNodes(w: World, a: ScheduleNodes): boolean {
  w.leases = w.leases.filter((l) => !(a.release ?? []).some((x) => x.name === l.name));
  for (const { lease: l } of a.slots) {
    assert.ok(!w.leases.some((x) => x.name === l.name), `slot ${l.name} taken twice`);
    w.leases.push({ name: l.name, resourceVersion: '1', group: l.group, holderIdentity: l.holderIdentity });
  }
  const jobs = a.slots.flatMap((x) => (x.job ? [x.job] : []));
  const died = w.crashAfterJobs !== undefined;
  for (const j of jobs.slice(0, w.crashAfterJobs ?? jobs.length)) addJob(w, j);
  w.crashAfterJobs = undefined;
  return died;
}

/** Applies the world's side of an action other than preflight and scheduleNodes (the others change nothing here). */
function applyAction(w: World, a: PlanAction | undefined): void {
  if (a?.type === 'createJobs') for (const j of a.jobs) addJob(w, j);
  if (a?.type === 'deleteLeases') w.leases = w.leases.filter((l) => !a.leases.some((x) => x.name === l.name));
  if (a?.type === 'pause') {
    w.spec = { ...w.spec, paused: true };
    w.generation++;
  }
  if (a?.type === 'deleteJobs') for (const n of a.names) w.jobs.delete(n);
}

/** Per-group concurrency, counted from the Leases and from the running jobs. */
function assertConcurrency(w: World): void {
  for (const g of w.spec.strategy.order) {
    const c = w.spec.groups[g]?.concurrency ?? 1;
    assert.ok(w.leases.filter((l) => l.group === g).length <= c, `group ${g}: more leases than concurrency ${c}`);
    const running = [...w.jobs.values()].filter(
      (j) => j.group === g && j.phase !== 'Completed' && j.phase !== 'Failed',
    ).length;
    assert.ok(running <= c, `group ${g}: ${running} running > concurrency ${c}`);
  }
}

function step(w: World): void {
  const o = obs(w);
  let s = decidePlan(o);
  const a = s.action;
  // The pass died before its status write (a crash in a scheduling pass): the next pass creates the missing PatchJobs.
  let died = false;
  if (a?.type === 'preflight') s = afterPreflight(o, s, [{ name: 'All', passed: true, message: 'ok' }]);
  if (a?.type === 'scheduleNodes') died = scheduleNodes(w, a);
  applyAction(w, a);
  if (!died) w.status = s.status;
  assertConcurrency(w);
}

/** A pending job ends (fails or completes); the Halt budget is tracked here, independently of the scheduler. */
function finish(w: World, e: Extract<Event, { kind: 'finish' }>, running: PlanJobFacts[]): void {
  const j = running[e.pick % running.length];
  if (!j) return;
  j.phase = e.fail ? 'Failed' : 'Completed';
  j.completionTime = w.now;
  if (e.fail) w.failedTotal++;
  if (w.spec.failurePolicy.type === 'Halt' && w.failedTotal >= Math.max(1, w.spec.failurePolicy.maxFailures))
    w.haltReached = true;
  // The job reconciler frees the slot when the job ends, or the plan's next pass finds it first.
  if (e.released) w.leases = w.leases.filter((l) => l.holderIdentity !== j.name);
}

/** A failed job is deleted so that its node may be scheduled once more. */
function retry(w: World, pick: number): void {
  const failed = [...w.jobs.values()].filter((j) => j.phase === 'Failed');
  const j = failed[pick % Math.max(1, failed.length)];
  if (j) {
    w.jobs.delete(j.name);
    w.retried.add(j.nodeName);
    w.failedTotal--;
  }
}

function apply(w: World, e: Event): void {
  const running = [...w.jobs.values()].filter((j) => j.phase === 'Pending');
  if (e.kind === 'finish' && running.length > 0) finish(w, e, running);
  if (e.kind === 'retry') retry(w, e.pick);
  if (e.kind === 'resume' && w.spec.paused) {
    w.spec = { ...w.spec, paused: false };
    w.generation++;
  }
  if (e.kind === 'tick') w.now += e.ms;
  if (e.kind === 'crash') w.crashAfterJobs = e.jobs;
}

describe('core/plan: scheduler properties (fast-check)', function () {
  this.timeout(120_000);

  it('never exceeds concurrency, keeps group order, patches a node once, and honours the failure policy', function () {
    fc.assert(
      fc.property(arbPlan, arbEvents, (p, events) => {
        const w = world(p);
        for (const e of events) {
          apply(w, e);
          step(w);
        }
        for (let i = 0; i < 8; i++) step(w);
        const budget = Math.max(1, w.spec.failurePolicy.maxFailures);
        const failed = [...w.jobs.values()].filter((j) => j.phase === 'Failed').length;
        if (w.spec.failurePolicy.type === 'Halt') {
          assert.equal(w.createdAfterHalt, false, 'no node scheduled once the Halt budget was used up');
          assert.equal(
            w.status.phase === 'Failed',
            w.haltReached,
            `Halt exactly once ${budget} node(s) failed (now ${failed} failed)`,
          );
        } else if (failed - (w.status.failuresAcknowledged ?? 0) >= budget) {
          assert.ok(
            w.status.phase === 'Paused' || w.spec.paused || w.status.policyPause !== undefined,
            'the Pause policy paused the plan',
          );
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('finishes: with no failures every claimed node completes and the plan is Completed, also when scheduling passes die between Lease and PatchJob', function () {
    fc.assert(
      fc.property(
        arbPlan,
        fc.array(fc.tuple(fc.nat({ max: 60 }), fc.integer({ min: 0, max: 3 })), { maxLength: 6 }),
        (p, crashes) => {
          const w = world(p);
          for (let round = 0; round < 200 && w.status.phase !== 'Completed'; round++) {
            const crash = crashes.find(([r]) => r === round);
            if (crash) w.crashAfterJobs = crash[1];
            step(w);
            apply(w, { kind: 'finish', pick: round, fail: false, released: round % 2 === 0 });
          }
          assert.equal(w.status.phase, 'Completed');
          const claimed = w.nodes.filter((n) => groupOf(w, n) !== undefined).length;
          assert.equal([...w.jobs.values()].filter((j) => j.phase === 'Completed').length, claimed);
          assert.equal(w.leases.length, 0);
        },
      ),
      { numRuns: 500 },
    );
  });
});
