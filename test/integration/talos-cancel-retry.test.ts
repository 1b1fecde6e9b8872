// The Talos client's cancellation and retry rules against the Talos simulator: an aborted context
// ends streams, calls and backoffs at once; a non-idempotent call is never repeated once it may
// have been sent, and moves to another endpoint only when the first one never connected.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { type Clock, systemClock } from '../../controller/runtime/clock.js';
import {
  TalosApiError,
  TalosErrorKind,
  createTalosClient,
  type TalosClient,
  type TalosClientOptions,
} from '../../controller/talos/index.js';
import { freePort } from '../lab/net.js';
import { createCA, issueCert } from '../lab/pki.js';
import { type LabDir, makeLabDir } from '../lab/process.js';
import { createRecordingFleet, startTalosSimulator, type TalosSimulator } from '../lab/talos/index.js';
import { waitFor } from '../lab/wait.js';
import { testContext as op } from '../support/op-context.js';

const SCHEMATIC = randomBytes(32).toString('hex');
const installer = (tag: string): string => `factory.talos.dev/metal-installer/${SCHEMATIC}:${tag}`;
const OPTS: TalosClientOptions = {
  callTimeoutMs: 5000,
  streamTimeoutMs: 30_000,
  maxAttempts: 6,
  backoff: { initialMs: 20, maxMs: 100, factor: 2 },
  idleCloseMs: 0,
};
/** How long an aborted call may take to settle. */
const PROMPTLY_MS = 1000;

/** Resolves to the call's error once it failed; fails the test when it does not settle within `ms`. */
async function failsWithin(p: Promise<unknown>, ms: number, what: string): Promise<TalosApiError> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    const outcome = await Promise.race([
      p.then(
        () => 'fulfilled' as const,
        (err: unknown) => err,
      ),
      bound,
    ]);
    assert.ok(outcome instanceof TalosApiError, `${what}: expected a TalosApiError, got ${String(outcome)}`);
    return outcome;
  } finally {
    clearTimeout(timer);
  }
}

/** The system clock, with every sleep counted and `onSleep` run before it (the client sleeps only to back off). */
function countingClock(onSleep: () => void = () => undefined): Clock & { sleeps: number } {
  const clock = {
    sleeps: 0,
    now: () => systemClock.now(),
    sleep: (ms: number, signal?: AbortSignal) => {
      clock.sleeps++;
      onSleep();
      return systemClock.sleep(ms, signal);
    },
  };
  return clock;
}

const reboots = (sim: TalosSimulator, node: string): number =>
  sim.node(node).history.filter((h) => h === 'rebooting').length;

describe('Talos client cancellation and retry rules', function () {
  this.timeout(30_000);
  let dir: LabDir;
  let sim: TalosSimulator;
  let client: TalosClient;
  let alias: string;
  let next = 10;
  const lifecycleNode = (): string => `127.0.82.${next++}`;
  const nodes = Array.from({ length: 12 }, lifecycleNode);
  const legacy = '127.0.82.200';
  const take = (): string => {
    const n = nodes.shift();
    if (!n) throw new Error('test node pool exhausted');
    return n;
  };

  before(async function () {
    dir = makeLabDir('talos-cancel-retry');
    const fleet = createRecordingFleet([
      ...nodes.map((ip, i) => ({
        name: `w-${i}`,
        role: 'worker' as const,
        talosVersion: 'v1.14.0',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: ip,
      })),
      {
        name: 'w-legacy',
        role: 'worker',
        talosVersion: 'v1.12.6',
        kubernetesVersion: 'v1.35.4',
        schematic: SCHEMATIC,
        internalIP: legacy,
      },
    ]);
    sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: false });
    // `localhost` (a SAN of the simulator's certificate): a second endpoint to the same simulator.
    alias = `localhost:${sim.port}`;
    client = createTalosClient({ endpoints: [sim.endpoint], secret: sim.secretData }, OPTS);
  });

  after(async function () {
    client?.close();
    await sim?.stop();
    dir?.remove();
  });

  describe('abort', function () {
    it('aborting the signal cancels a running installImage stream at once (Canceled)', async function () {
      const n = take();
      await client.pullImage(op(), n, installer('v1.14.1'));
      sim.setTimings({ installMs: 20_000 }); // the stream would run for 20 s
      try {
        const abort = new AbortController();
        const install = client.installImage(op({ signal: abort.signal }), n, installer('v1.14.1'));
        await waitFor(() => sim.node(n).installing, {
          timeoutMs: 5000,
          intervalMs: 10,
          description: 'the install stream to start',
        });
        abort.abort();
        const err = await failsWithin(install, PROMPTLY_MS, 'the aborted installImage');
        assert.equal(err.kind, TalosErrorKind.Canceled);
        assert.equal(err.transient, false);
        assert.equal(err.method, 'LifecycleService.Upgrade');
      } finally {
        sim.setTimings({ installMs: 40 });
      }
    });

    it('aborting the signal cancels a pending version call at once (Canceled)', async function () {
      const n = take();
      await client.version(op(), n); // channel connected: the next call goes straight out
      sim.faults.set(n, { slowResponseMs: 20_000 });
      const abort = new AbortController();
      const pending = client.version(op({ signal: abort.signal }), n);
      await new Promise(setImmediate); // let the call be sent
      abort.abort();
      const err = await failsWithin(pending, PROMPTLY_MS, 'the aborted version call');
      assert.equal(err.kind, TalosErrorKind.Canceled);
      assert.equal(err.node, n);
    });

    it('aborting the signal ends a backoff between attempts at once (Canceled)', async function () {
      const n = take();
      sim.faults.unreachable(n, 60_000);
      const abort = new AbortController();
      const clock = countingClock();
      const c = createTalosClient(
        { endpoints: [sim.endpoint], secret: sim.secretData },
        { ...OPTS, backoff: { initialMs: 20_000, maxMs: 20_000, factor: 1 } },
      );
      try {
        const call = c.version(op({ signal: abort.signal, clock }), n);
        await waitFor(() => clock.sleeps > 0, { timeoutMs: 5000, intervalMs: 10, description: 'the first backoff' });
        abort.abort();
        assert.equal(
          (await failsWithin(call, PROMPTLY_MS, 'the version call in backoff')).kind,
          TalosErrorKind.Canceled,
        );
      } finally {
        c.close();
        sim.faults.clear(n);
      }
    });

    it('an already aborted context sends nothing', async function () {
      const n = take();
      const abort = new AbortController();
      abort.abort();
      const err = await failsWithin(
        client.reboot(op({ signal: abort.signal }), n),
        PROMPTLY_MS,
        'reboot with an aborted context',
      );
      assert.equal(err.kind, TalosErrorKind.Canceled);
      assert.equal(reboots(sim, n), 0);
    });

    it("the context's deadline bounds an attempt below callTimeoutMs (DeadlineExceeded, not retried past it)", async function () {
      const n = take();
      sim.faults.set(n, { slowResponseMs: 20_000 });
      const err = await failsWithin(
        client.version(op({ timeoutMs: 200 }), n),
        200 + PROMPTLY_MS,
        'version past its deadline',
      );
      assert.equal(err.kind, TalosErrorKind.DeadlineExceeded);
      assert.equal(err.transient, true);
    });
  });

  describe('retries', function () {
    it('a reboot that failed after it may have been sent is returned, not retried nor sent to another endpoint', async function () {
      const n = take();
      const before = sim.node(n).bootId;
      sim.faults.unreachable(n, 60_000);
      // Were the adapter to back off and retry, the fault would be gone by then and the reboot would run.
      const clock = countingClock(() => sim.faults.clear(n));
      const c = createTalosClient({ endpoints: [sim.endpoint, alias], secret: sim.secretData }, OPTS);
      try {
        const err = await failsWithin(c.reboot(op({ clock }), n), 5000, 'reboot of an unreachable node');
        assert.equal(err.kind, TalosErrorKind.Unavailable);
        assert.equal(err.transient, true, 'the caller may decide to try again later');
        assert.equal(err.endpoint, sim.endpoint, 'not sent through the second endpoint');
        assert.equal(clock.sleeps, 0, 'no backoff: no retry');
        sim.faults.clear(n);
        assert.equal(reboots(sim, n), 0);
        assert.equal(sim.node(n).bootId, before);
      } finally {
        c.close();
      }
    });

    it('a read in the same situation is retried: next endpoint at once, then a backoff, then it answers', async function () {
      const n = take();
      sim.faults.unreachable(n, 60_000);
      const clock = countingClock(() => sim.faults.clear(n));
      const c = createTalosClient({ endpoints: [sim.endpoint, alias], secret: sim.secretData }, OPTS);
      try {
        assert.equal((await c.version(op({ clock }), n)).tag, 'v1.14.0');
        assert.equal(clock.sleeps, 1, 'one backoff after both endpoints failed');
      } finally {
        c.close();
      }
    });

    it('non-idempotent calls move to the second endpoint when the first is a closed port (provably not sent)', async function () {
      const closed = `127.0.0.1:${await freePort()}`;
      const c = createTalosClient({ endpoints: [closed, sim.endpoint], secret: sim.secretData }, OPTS);
      try {
        const n = take();
        await c.reboot(op(), n);
        assert.equal(reboots(sim, n), 1, 'sent exactly once');
        const res = await c.legacyUpgrade(op(), legacy, installer('v1.13.9'));
        assert.equal(res.ack, 'Upgrade request received');
        assert.equal(sim.node(legacy).history.filter((h) => h.endsWith('(legacy)')).length, 1);
      } finally {
        c.close();
      }
    });

    it('a non-idempotent call whose every endpoint is closed fails Unavailable, saying it was not sent', async function () {
      const closed = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
      const c = createTalosClient({ endpoints: closed, secret: sim.secretData }, { ...OPTS, maxAttempts: 4 });
      try {
        const n = take();
        const err = await failsWithin(c.reboot(op(), n), 5000, 'reboot through closed endpoints');
        assert.equal(err.kind, TalosErrorKind.Unavailable);
        assert.equal(err.transient, true);
        assert.match(err.message, /not sent/);
        assert.equal(reboots(sim, n), 0);
      } finally {
        c.close();
      }
    });
  });

  describe('TLS diagnosis', function () {
    it('a client certificate the endpoint refuses ⇒ TlsRejected naming the endpoint, for a reboot too, without failover', async function () {
      const other = createCA(join(dir.path, 'other'), 'other-ca', {
        commonName: 'talos',
        keyType: 'ed25519',
        organizations: ['talos'],
      });
      const cert = issueCert(join(dir.path, 'other'), 'stranger', other, {
        commonName: 'stranger',
        organizations: ['os:admin'],
        usage: 'client',
        keyType: 'ed25519',
      });
      const c = createTalosClient(
        {
          endpoints: [sim.endpoint, alias],
          secret: { 'ca.crt': sim.caPem, 'tls.crt': cert.cert, 'tls.key': cert.key },
        },
        OPTS,
      );
      try {
        const n = take();
        const err = await failsWithin(c.reboot(op(), n), 5000, 'reboot with a refused certificate');
        assert.equal(err.kind, TalosErrorKind.TlsRejected);
        assert.equal(err.transient, false);
        assert.equal(err.endpoint, sim.endpoint);
        assert.match(
          err.message,
          new RegExp(`TLS handshake with Talos endpoint ${sim.endpoint.replace(/\./g, '\\.')} failed`),
        );
        assert.match(err.message, /client certificate/);
        assert.equal(reboots(sim, n), 0);
      } finally {
        c.close();
      }
    });
  });
});
