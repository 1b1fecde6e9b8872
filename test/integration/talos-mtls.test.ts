// mTLS failures through the product client against the Talos simulator: each gives a clear,
// non-transient error naming the endpoint.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { type Clock, systemClock } from '../../controller/runtime/clock.js';
import {
  TalosApiError,
  TalosErrorKind,
  createTalosClient,
  type TalosClientOptions,
} from '../../controller/talos/index.js';
import { type LabDir, makeLabDir } from '../lab/process.js';
import { createCA, issueCert } from '../lab/pki.js';
import { createRecordingFleet, startTalosSimulator, type TalosSimulator } from '../lab/talos/index.js';
import { testContext as op } from '../support/op-context.js';

const OPTS: TalosClientOptions = {
  callTimeoutMs: 2000,
  maxAttempts: 3,
  backoff: { initialMs: 20, maxMs: 100, factor: 2 },
  idleCloseMs: 0,
};
const NODE = '127.0.78.10';

async function failure(p: Promise<unknown>): Promise<TalosApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof TalosApiError, `expected TalosApiError, got ${String(err)}`);
    return err;
  }
  return assert.fail('expected the call to fail');
}

describe('Talos client mTLS errors', function () {
  this.timeout(30_000);
  let dir: LabDir;
  let sim: TalosSimulator;
  let endpointRe: RegExp;

  before(async function () {
    dir = makeLabDir('talos-mtls');
    const fleet = createRecordingFleet([
      {
        name: 'cp-1',
        role: 'controlplane',
        talosVersion: 'v1.14.0',
        kubernetesVersion: 'v1.35.4',
        schematic: randomBytes(32).toString('hex'),
        internalIP: NODE,
      },
    ]);
    sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: false });
    endpointRe = new RegExp(sim.endpoint.replace(/\./g, '\\.'));
  });

  after(async function () {
    await sim?.stop();
    dir?.remove();
  });

  it('wrong CA: the server certificate does not verify against ca.crt', async function () {
    const other = createCA(join(dir.path, 'other'), 'other-ca', {
      commonName: 'talos',
      keyType: 'ed25519',
      organizations: ['talos'],
    });
    const c = createTalosClient(
      {
        endpoints: [sim.endpoint],
        secret: { 'ca.crt': other.cert, 'tls.crt': sim.adminCert.cert, 'tls.key': sim.adminCert.keyTalos },
      },
      OPTS,
    );
    try {
      const err = await failure(c.version(op(), NODE));
      assert.equal(err.kind, TalosErrorKind.TlsRejected);
      assert.equal(err.transient, false);
      assert.equal(err.endpoint, sim.endpoint);
      assert.match(err.message, endpointRe);
      assert.match(err.message, /TLS handshake with Talos endpoint/);
    } finally {
      c.close();
    }
  });

  it('client certificate issued by another CA: the server rejects the handshake', async function () {
    const other = createCA(join(dir.path, 'other2'), 'other-ca', {
      commonName: 'talos',
      keyType: 'ed25519',
      organizations: ['talos'],
    });
    const cert = issueCert(join(dir.path, 'other2'), 'stranger', other, {
      commonName: 'stranger',
      organizations: ['os:admin'],
      usage: 'client',
      keyType: 'ed25519',
    });
    const c = createTalosClient(
      { endpoints: [sim.endpoint], secret: { 'ca.crt': sim.caPem, 'tls.crt': cert.cert, 'tls.key': cert.key } },
      OPTS,
    );
    try {
      const err = await failure(c.version(op(), NODE));
      assert.equal(err.kind, TalosErrorKind.TlsRejected);
      assert.match(err.message, endpointRe);
    } finally {
      c.close();
    }
  });

  it('expired client certificate: refused before dialling, naming the endpoint and the expiry', async function () {
    const expired = sim.issueClientCert('expired-admin', { roles: ['os:admin'], expired: true });
    const c = createTalosClient(
      {
        endpoints: [sim.endpoint],
        secret: { 'ca.crt': sim.caPem, 'tls.crt': expired.cert, 'tls.key': expired.keyTalos },
      },
      OPTS,
    );
    try {
      const err = await failure(c.version(op(), NODE));
      assert.equal(err.kind, TalosErrorKind.BadCredentials);
      assert.match(err.message, endpointRe);
      assert.match(err.message, /expired at 2020-01-02T00:00:00\.000Z/);
    } finally {
      c.close();
    }
  });

  it('expired client certificate: the server rejects it too (client clock inside its validity)', async function () {
    const expired = sim.issueClientCert('expired-admin-2', { roles: ['os:admin'], expired: true });
    const c = createTalosClient(
      {
        endpoints: [sim.endpoint],
        secret: { 'ca.crt': sim.caPem, 'tls.crt': expired.cert, 'tls.key': expired.keyTalos },
      },
      OPTS,
    );
    try {
      // The client's clock runs inside the certificate's validity (2020-01-01); the server's does not.
      const skew = systemClock.now() - Date.parse('2020-01-01T12:00:00Z');
      const skewed: Clock = {
        now: () => systemClock.now() - skew,
        sleep: (ms, signal) => systemClock.sleep(ms, signal),
      };
      const err = await failure(c.version(op({ clock: skewed }), NODE));
      assert.equal(err.kind, TalosErrorKind.TlsRejected);
      assert.match(err.message, endpointRe);
    } finally {
      c.close();
    }
  });

  it('non-admin role (os:reader): reads work, Upgrade and the machine config are refused naming endpoint and role', async function () {
    const reader = sim.issueClientCert('reader', { roles: ['os:reader'] });
    const c = createTalosClient(
      {
        endpoints: [sim.endpoint],
        secret: { 'ca.crt': sim.caPem, 'tls.crt': reader.cert, 'tls.key': reader.keyTalos },
      },
      OPTS,
    );
    try {
      assert.equal((await c.version(op(), NODE)).tag, 'v1.14.0');
      const err = await failure(
        c.legacyUpgrade(op(), NODE, `factory.talos.dev/metal-installer/${'0'.repeat(64)}:v1.14.1`),
      );
      assert.equal(err.kind, TalosErrorKind.PermissionDenied);
      assert.equal(err.transient, false);
      assert.match(err.message, endpointRe);
      assert.match(err.message, /not authorized/);
      assert.match(err.message, /os:reader/);
      assert.equal((await failure(c.readConfig(op(), NODE))).kind, TalosErrorKind.PermissionDenied);
    } finally {
      c.close();
    }
  });
});
