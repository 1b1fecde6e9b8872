// The plan reconciler's background runner for installer pre-pulls: start never waits for a pull,
// each pull that ends is reported back and wakes its plan, leader loss cancels the pulls (and keeps
// no result). The Talos side is a stand-in whose pulls end when the test says so.
import assert from 'node:assert/strict';
import { createPrePullRunner } from '../../../controller/rollout/plan/pre-pull-runner.js';
import type { TalosConnect } from '../../../controller/talos/talos-access.js';
import { rootContext, type OpContext } from '../../../controller/runtime/context.js';
import { systemClock } from '../../../controller/runtime/clock.js';
import { createLogger } from '../../../controller/telemetry/logger.js';
import type { TalosPort } from '../../../controller/talos/port.js';
import { waitFor } from '../../lab/wait.js';

interface Pending {
  node: string;
  image: string;
  signal: AbortSignal;
  finish: (err?: Error) => void;
}

/** A Talos connection whose pullImage ends only when the test finishes it (or its signal aborts). */
function standIn(): { connect: TalosConnect; pending: Pending[]; closed: () => number } {
  const pending: Pending[] = [];
  let closed = 0;
  const connect: TalosConnect = () =>
    Promise.resolve({
      pullImage: (ctx: OpContext, node: string, image: string) =>
        new Promise<string>((resolve, reject) => {
          ctx.signal.addEventListener('abort', () => reject(new Error('canceled')), { once: true });
          pending.push({ node, image, signal: ctx.signal, finish: (err) => (err ? reject(err) : resolve(image)) });
        }),
      close: () => void closed++,
    } as unknown as TalosPort);
  return { connect, pending, closed: () => closed };
}

const config = { secretRef: { name: 't' } };
const IMAGE = 'ghcr.io/siderolabs/installer:v1.14.0';

describe('rollout/plan: the pre-pull runner', function () {
  it('starts pulls without waiting, reports each that ends (pulled or its error) and wakes the plan', async function () {
    const talos = standIn();
    const woken: string[] = [];
    const leader = new AbortController();
    const runner = createPrePullRunner({
      ctx: rootContext(systemClock, leader.signal),
      connectTalos: talos.connect,
      wake: (p) => woken.push(p),
      log: createLogger('silent'),
    });
    runner.start('p', config, [
      { node: 'w-3', image: IMAGE, address: '10.0.0.3' },
      { node: 'w-4', image: IMAGE, address: '10.0.0.4' },
    ]);
    runner.start('p', config, [{ node: 'w-3', image: IMAGE, address: '10.0.0.3' }]); // already pulling: left alone
    const waiting = new Set(['w-3', 'w-4']);
    assert.deepEqual([...runner.facts('p', waiting).running].sort(), ['w-3', 'w-4']);
    await waitFor(() => talos.pending.length === 2 || undefined, { timeoutMs: 5_000, description: 'two pulls issued' });
    assert.deepEqual(
      talos.pending.map((x) => x.node).sort(),
      ['10.0.0.3', '10.0.0.4'],
      'the node is addressed as the Talos API reaches it',
    );
    talos.pending.find((x) => x.node === '10.0.0.3')?.finish();
    talos.pending.find((x) => x.node === '10.0.0.4')?.finish(new Error('rpc error: NOT_FOUND'));
    await waitFor(() => woken.length === 2 || undefined, { timeoutMs: 5_000, description: 'the plan woken twice' });
    const facts = runner.facts('p', waiting);
    assert.deepEqual(facts.running.size, 0);
    assert.deepEqual(facts.results.map((r) => [r.node, r.image, r.error]).sort(), [
      ['w-3', IMAGE, undefined],
      ['w-4', IMAGE, 'rpc error: NOT_FOUND'],
    ]);
    assert.equal(talos.closed(), 2, 'every connection released');
    // A node that got its PatchJob is no longer waiting: its result is forgotten.
    assert.deepEqual(
      runner.facts('p', new Set(['w-4'])).results.map((r) => r.node),
      ['w-4'],
    );
    assert.deepEqual(runner.facts('other', waiting), { running: new Set(), results: [] });
  });

  it('leader loss cancels the pulls in flight, keeps no result and starts nothing more', async function () {
    const talos = standIn();
    const woken: string[] = [];
    const leader = new AbortController();
    const runner = createPrePullRunner({
      ctx: rootContext(systemClock, leader.signal),
      connectTalos: talos.connect,
      wake: (p) => woken.push(p),
      log: createLogger('silent'),
    });
    runner.start('p', config, [{ node: 'w-3', image: IMAGE, address: 'w-3' }]);
    await waitFor(() => talos.pending.length === 1 || undefined, { timeoutMs: 5_000, description: 'pull issued' });
    leader.abort();
    assert.ok(talos.pending[0]?.signal.aborted, "the pull's signal aborted with the leader's");
    await waitFor(() => runner.facts('p', new Set(['w-3'])).running.size === 0 || undefined, {
      timeoutMs: 5_000,
      description: 'the pull ended',
    });
    assert.deepEqual(runner.facts('p', new Set(['w-3'])).results, []);
    assert.deepEqual(woken, []);
    runner.start('p', config, [{ node: 'w-4', image: IMAGE, address: 'w-4' }]);
    assert.equal(runner.facts('p', new Set(['w-4'])).running.size, 0);
  });
});
