// The lab registry: Debian's docker-registry on loopback, images published through the
// distribution API, manifests answered by tag, and the anonymous bearer-token flow.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { waitFor } from '../lab/wait.js';
import {
  DOCKER_MANIFEST,
  OCI_MANIFEST,
  parseBearerChallenge,
  startRegistry,
  type Registry,
} from '../lab/registry/index.js';

const ACCEPT = [
  OCI_MANIFEST,
  DOCKER_MANIFEST,
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
].join(', ');

describe('lab registry', function () {
  describe('without auth', function () {
    let registry: Registry;

    before(async function () {
      registry = await startRegistry();
    });

    after(async function () {
      await registry?.stop();
    });

    it('listens on a loopback address', async function () {
      assert.match(registry.host, /^127\.0\.0\.1:\d+$/);
      const res = await fetch(`http://${registry.host}/v2/`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('docker-distribution-api-version'), 'registry/2.0');
    });

    it('answers 200 to HEAD and GET of a published tag, with its digest', async function () {
      const { digest } = await registry.publish('siderolabs/installer', 'v1.10.1');
      assert.match(digest, /^sha256:[0-9a-f]{64}$/);
      const head = await fetch(`http://${registry.host}/v2/siderolabs/installer/manifests/v1.10.1`, {
        method: 'HEAD',
        headers: { accept: ACCEPT },
      });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('docker-content-digest'), digest);
      assert.equal(head.headers.get('content-type'), OCI_MANIFEST);

      const get = await fetch(`http://${registry.host}/v2/siderolabs/installer/manifests/v1.10.1`, {
        headers: { accept: ACCEPT },
      });
      assert.equal(get.status, 200);
      const manifest = (await get.json()) as { schemaVersion: number; mediaType: string; layers: unknown[] };
      assert.deepEqual([manifest.schemaVersion, manifest.mediaType, manifest.layers.length], [2, OCI_MANIFEST, 1]);

      const byDigest = await fetch(`http://${registry.host}/v2/siderolabs/installer/manifests/${digest}`, {
        method: 'HEAD',
        headers: { accept: ACCEPT },
      });
      assert.equal(byDigest.status, 200);
    });

    it('answers 404 for a tag that was never published', async function () {
      await registry.publish('siderolabs/installer', 'v1.10.2');
      const head = await fetch(`http://${registry.host}/v2/siderolabs/installer/manifests/v9.9.9`, {
        method: 'HEAD',
        headers: { accept: ACCEPT },
      });
      assert.equal(head.status, 404);
      const get = await fetch(`http://${registry.host}/v2/siderolabs/installer/manifests/v9.9.9`, {
        headers: { accept: ACCEPT },
      });
      assert.equal(get.status, 404);
      assert.equal(((await get.json()) as { errors: { code: string }[] }).errors[0]?.code, 'MANIFEST_UNKNOWN');
      const tags = await fetch(`http://${registry.host}/v2/siderolabs/installer/tags/list`);
      assert.deepEqual(((await tags.json()) as { tags: string[] }).tags.sort(), ['v1.10.1', 'v1.10.2']);
    });
  });

  describe('with token auth', function () {
    let registry: Registry;

    before(async function () {
      registry = await startRegistry({ tokenAuth: true });
    });

    after(async function () {
      await registry?.stop();
    });

    it('makes an anonymous client go through 401 + Bearer challenge, fetch a pull token and retry', async function () {
      const { digest } = await registry.publish('siderolabs/installer', 'v1.11.0');
      const url = `http://${registry.host}/v2/siderolabs/installer/manifests/v1.11.0`;

      const first = await fetch(url, { method: 'HEAD', headers: { accept: ACCEPT } });
      assert.equal(first.status, 401);
      const challenge = parseBearerChallenge(first.headers.get('www-authenticate'));
      assert.ok(challenge, `a Bearer challenge: ${first.headers.get('www-authenticate')}`);
      assert.equal(challenge.realm, registry.tokenService?.realm);
      assert.equal(challenge.service, 'kangal-lab-registry');
      assert.equal(challenge.scope, 'repository:siderolabs/installer:pull');

      const tokenUrl = new URL(challenge.realm);
      tokenUrl.searchParams.set('service', challenge.service ?? '');
      tokenUrl.searchParams.set('scope', challenge.scope ?? '');
      const tokenRes = await fetch(tokenUrl);
      assert.equal(tokenRes.status, 200);
      const { token } = (await tokenRes.json()) as { token: string };

      const retry = await fetch(url, { method: 'HEAD', headers: { accept: ACCEPT, authorization: `Bearer ${token}` } });
      assert.equal(retry.status, 200);
      assert.equal(retry.headers.get('docker-content-digest'), digest);
      const missing = await fetch(`http://${registry.host}/v2/siderolabs/installer/manifests/v0.0.0`, {
        method: 'HEAD',
        headers: { accept: ACCEPT, authorization: `Bearer ${token}` },
      });
      assert.equal(missing.status, 404);

      // The anonymous token is pull-only: the registry refuses a push with it.
      const push = await fetch(`http://${registry.host}/v2/siderolabs/installer/blobs/uploads/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(push.status, 401);
      assert.deepEqual(
        registry.tokenService?.issued.filter((i) => i.anonymous).map((i) => i.granted),
        [['pull']],
      );
    });
  });

  it('removes its process and storage on stop()', async function () {
    const registry = await startRegistry();
    const { digest } = await registry.publish('a/b', 'c');
    assert.ok(digest);
    const storage = registry.storageDir;
    assert.ok(existsSync(storage));
    await registry.stop();
    assert.equal(existsSync(storage), false);
    assert.throws(() => process.kill(registry.pid, 0), /ESRCH/);
    await assert.rejects(fetch(`http://${registry.host}/v2/`));
  });

  it('leaves no registry process and no temp dirs behind when the test process is SIGKILLed', async function () {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/lab/registry/run-until-killed.ts'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout }).once('line', resolve);
        child.once('exit', (code) => reject(new Error(`fixture exited ${code} before it was ready`)));
      });
      const info = JSON.parse(line) as { registryPid: number; registryStorage: string; forgeRepo: string };
      assert.doesNotThrow(() => process.kill(info.registryPid, 0));
      assert.ok(existsSync(info.registryStorage) && existsSync(info.forgeRepo));
      child.kill('SIGKILL');
      await waitFor(
        () => {
          try {
            process.kill(info.registryPid, 0);
            return undefined;
          } catch {
            return true;
          }
        },
        { timeoutMs: 5000, description: 'the registry to die with its parent' },
      );
      await waitFor(() => (!existsSync(info.registryStorage) && !existsSync(info.forgeRepo)) || undefined, {
        timeoutMs: 5000,
        description: 'the janitors to remove the temp dirs',
      });
    } finally {
      child.kill('SIGKILL');
    }
  });
});
