// Pure Talos decisions (controller/core/talos-flow.ts) and credential parsing, table-driven.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  GrpcCode,
  TalosErrorKind,
  UpgradeFlow,
  backoffDelay,
  classifyGrpcError,
  hasBootIdResource,
  parseInstallerImage,
  upgradeFlowFor,
} from '../../../controller/core/talos-flow.js';
import { TalosApiError, loadCredentials, relabelEd25519Key } from '../../../controller/talos/index.js';
import { createCA, issueCert } from '../../lab/pki.js';

describe('core/talos-flow', function () {
  it('picks the upgrade flow like talosctl 1.14 (lifecycle only after v1.13.0-alpha.2, below 2.0)', function () {
    const table: [string, UpgradeFlow][] = [
      ['v1.8.4', UpgradeFlow.Legacy],
      ['v1.12.6', UpgradeFlow.Legacy],
      ['v1.13.0-alpha.1', UpgradeFlow.Legacy],
      ['v1.13.0-alpha.2', UpgradeFlow.Legacy],
      ['v1.13.0-alpha.3', UpgradeFlow.Lifecycle],
      ['v1.13.0-beta.0', UpgradeFlow.Lifecycle],
      ['v1.13.0', UpgradeFlow.Lifecycle],
      ['v1.13.9', UpgradeFlow.Lifecycle],
      ['v1.14.0-rc.1', UpgradeFlow.Lifecycle],
      ['1.14.0', UpgradeFlow.Lifecycle],
      ['v2.0.0', UpgradeFlow.Legacy],
      ['garbage', UpgradeFlow.Legacy],
    ];
    for (const [tag, flow] of table) assert.equal(upgradeFlowFor(tag), flow, tag);
  });

  it('knows when the BootIDs resource exists (1.14.0-alpha.2+)', function () {
    assert.equal(hasBootIdResource('v1.13.9'), false);
    assert.equal(hasBootIdResource('v1.14.0-alpha.1'), false);
    assert.equal(hasBootIdResource('v1.14.0-alpha.2'), true);
    assert.equal(hasBootIdResource('v1.14.0'), true);
  });

  it('parses installer image references', function () {
    const id = 'a'.repeat(64);
    assert.deepEqual(parseInstallerImage(`factory.talos.dev/aws-installer-secureboot/${id}:v1.14.0`), {
      registry: 'factory.talos.dev',
      repository: `aws-installer-secureboot/${id}`,
      tag: 'v1.14.0',
      schematic: id,
      platform: 'aws',
      secureBoot: true,
    });
    assert.deepEqual(parseInstallerImage(`factory.talos.dev/installer/${id}:v1.12.6`), {
      registry: 'factory.talos.dev',
      repository: `installer/${id}`,
      tag: 'v1.12.6',
      schematic: id,
      platform: 'metal',
      secureBoot: false,
    });
    assert.deepEqual(parseInstallerImage('ghcr.io/siderolabs/installer:v1.13.9'), {
      registry: 'ghcr.io',
      repository: 'siderolabs/installer',
      tag: 'v1.13.9',
      secureBoot: false,
    });
    assert.equal(parseInstallerImage('installer'), undefined);
    assert.equal(parseInstallerImage('ghcr.io/siderolabs/installer'), undefined);
  });

  it('classifies gRPC failures by what to do about them', function () {
    const table: [number, string, TalosErrorKind, boolean][] = [
      [
        GrpcCode.UNAVAILABLE,
        'connection error: desc = "transport: Error while dialing: dial tcp 10.0.0.1:50000: connect: connection refused"',
        TalosErrorKind.Unavailable,
        true,
      ],
      [
        GrpcCode.UNAVAILABLE,
        'No connection established. Last error: connect ECONNREFUSED 127.0.0.1:1',
        TalosErrorKind.Unavailable,
        true,
      ],
      [
        GrpcCode.UNAVAILABLE,
        'No connection established. Last error: Error: unable to verify the first certificate',
        TalosErrorKind.TlsRejected,
        false,
      ],
      [
        GrpcCode.UNAVAILABLE,
        'authentication handshake failed: x509: certificate signed by unknown authority',
        TalosErrorKind.TlsRejected,
        false,
      ],
      [GrpcCode.DEADLINE_EXCEEDED, 'Deadline exceeded', TalosErrorKind.DeadlineExceeded, true],
      [GrpcCode.INTERNAL, 'Received RST_STREAM with code 2', TalosErrorKind.Unavailable, true],
      [GrpcCode.INTERNAL, 'upgrade failed: disk full', TalosErrorKind.OperationFailed, false],
      [GrpcCode.PERMISSION_DENIED, 'not authorized', TalosErrorKind.PermissionDenied, false],
      [
        GrpcCode.FAILED_PRECONDITION,
        'another installation/upgrade is already in progress',
        TalosErrorKind.FailedPrecondition,
        false,
      ],
      [GrpcCode.UNIMPLEMENTED, 'unknown service machine.LifecycleService', TalosErrorKind.Unimplemented, false],
      [GrpcCode.NOT_FOUND, "resource doesn't exist", TalosErrorKind.NotFound, false],
      [GrpcCode.UNKNOWN, 'error validating installer image', TalosErrorKind.OperationFailed, false],
    ];
    for (const [code, details, kind, transient] of table)
      assert.deepEqual(classifyGrpcError(code, details), { kind, transient }, details);
  });

  it('backs off exponentially with jitter, capped', function () {
    const p = { initialMs: 100, maxMs: 1000, factor: 2 };
    assert.equal(backoffDelay(p, 1, 0), 50);
    assert.equal(backoffDelay(p, 1, 0.999), 100);
    assert.equal(backoffDelay(p, 3, 0), 200);
    assert.equal(backoffDelay(p, 10, 0), 500);
    assert.ok(backoffDelay(p, 10, 0.999) <= 1000);
  });
});

describe('talos/credentials', function () {
  let dir: string;
  let ca: { cert: string };
  let client: { cert: string; key: string };
  before(function () {
    dir = mkdtempSync(join(tmpdir(), 'talos-creds-'));
    const c = createCA(dir, 'ca', { commonName: 'talos', keyType: 'ed25519', organizations: ['talos'] });
    ca = c;
    client = issueCert(dir, 'admin', c, {
      commonName: 'admin',
      organizations: ['os:admin', 'os:reader'],
      usage: 'client',
      keyType: 'ed25519',
    });
  });
  after(function () {
    rmSync(dir, { recursive: true, force: true });
  });
  const talosLabel = (k: string): string =>
    k.replace(/-----(BEGIN|END) PRIVATE KEY-----/g, '-----$1 ED25519 PRIVATE KEY-----');

  it('accepts raw PEM and base64 of PEM, relabels Ed25519 keys, reads roles and expiry', function () {
    const raw = loadCredentials({ 'ca.crt': ca.cert, 'tls.crt': client.cert, 'tls.key': talosLabel(client.key) });
    const b64 = loadCredentials({
      'ca.crt': Buffer.from(ca.cert).toString('base64'),
      'tls.crt': Buffer.from(client.cert).toString('base64'),
      'tls.key': Buffer.from(Buffer.from(talosLabel(client.key)).toString('base64')),
    });
    assert.equal(raw.fingerprint, b64.fingerprint);
    assert.match(raw.keyPem, /^-----BEGIN PRIVATE KEY-----/);
    assert.deepEqual(raw.roles, ['os:admin', 'os:reader']);
    assert.ok(raw.notAfter.getTime() > Date.now());
    assert.equal(
      relabelEd25519Key('-----BEGIN ED25519 PRIVATE KEY-----\nx\n-----END ED25519 PRIVATE KEY-----'),
      '-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----',
    );
  });

  it('rejects missing and unparsable fields as BadCredentials', function () {
    assert.throws(
      () => loadCredentials({ 'ca.crt': ca.cert, 'tls.crt': client.cert }),
      (e: unknown) => e instanceof TalosApiError && e.kind === 'BadCredentials' && /tls\.key/.test(e.message),
    );
    assert.throws(
      () => loadCredentials({ 'ca.crt': 'not pem', 'tls.crt': client.cert, 'tls.key': client.key }),
      (e: unknown) => e instanceof TalosApiError && e.kind === 'BadCredentials',
    );
  });
});
