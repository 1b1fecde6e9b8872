// The registry client against the lab's real registry (Debian's docker-registry on loopback):
// published and missing tags, the anonymous bearer-token flow, a mirror mapping, cancellation,
// the deadline and a closed port.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { createRegistryClient } from '../../controller/registry/index.js';
import { freePort } from '../lab/net.js';
import { startRegistry, type Registry } from '../lab/registry/index.js';
import { waitFor } from '../lab/wait.js';
import { testContext } from '../support/op-context.js';
import { rejection } from '../support/outcome.js';


/** Records every request the client makes (method, URL, whether it carried a bearer token). */
function countingFetch(): { fetch: typeof fetch; requests: { method: string; url: string; bearer: boolean }[] } {
  const requests: { method: string; url: string; bearer: boolean }[] = [];
  const f: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    requests.push({ method: init?.method ?? 'GET', url: input instanceof Request ? input.url : input.toString(), bearer: /^Bearer /.test(headers.get('authorization') ?? '') });
    return fetch(input, init);
  };
  return { fetch: f, requests };
}

describe('registry client (lab registry)', function () {
  describe('without auth', function () {
    let registry: Registry;
    let digest: string;

    before(async function () {
      registry = await startRegistry();
      ({ digest } = await registry.publish('siderolabs/installer', 'v1.13.2'));
    });

    after(async function () {
      await registry?.stop();
    });

    it('finds a published tag, with its digest', async function () {
      const image = `${registry.host}/siderolabs/installer:v1.13.2`;
      const check = await createRegistryClient().imageExists(testContext(), image);
      assert.deepEqual(
        { ...check, detail: undefined },
        { image, exists: true, checkedAt: registry.url, detail: undefined },
      );
      assert.match(check.detail, new RegExp(`HTTP 200, digest ${digest}`));
    });

    it('finds a published manifest by digest', async function () {
      const check = await createRegistryClient().imageExists(testContext(), `${registry.host}/siderolabs/installer@${digest}`);
      assert.equal(check.exists, true);
    });

    it('reports a tag that was never published as missing', async function () {
      const check = await createRegistryClient().imageExists(testContext(), `${registry.host}/siderolabs/installer:v9.9.9`);
      assert.equal(check.exists, false);
      assert.equal(check.checkedAt, registry.url);
      assert.match(check.detail, /not found .*HTTP 404/);
    });

    it('reports a repository that does not exist as missing', async function () {
      const check = await createRegistryClient().imageExists(testContext(), `${registry.host}/nobody/nothing:v1`);
      assert.equal(check.exists, false);
    });

    it('with ghcr.io mapped to the lab registry, checks ghcr.io/siderolabs/installer:v1.13.2 there', async function () {
      const counting = countingFetch();
      const client = createRegistryClient({ mirrors: { 'ghcr.io': registry.url }, fetch: counting.fetch });
      const check = await client.imageExists(testContext(), 'ghcr.io/siderolabs/installer:v1.13.2');
      assert.equal(check.exists, true);
      assert.equal(check.checkedAt, registry.url);
      assert.match(check.detail, new RegExp(`found at mirror ${registry.url} \\(for ghcr\\.io\\)`));
      assert.deepEqual(counting.requests.map((r) => [r.method, r.url]), [['HEAD', `${registry.url}/v2/siderolabs/installer/manifests/v1.13.2`]]);

      const missing = await client.imageExists(testContext(), 'ghcr.io/siderolabs/installer:v1.13.9');
      assert.equal(missing.exists, false);
      assert.equal(missing.checkedAt, registry.url);
    });
  });

  describe('with token auth', function () {
    let registry: Registry;

    before(async function () {
      registry = await startRegistry({ tokenAuth: true });
      await registry.publish('siderolabs/installer', 'v1.13.2');
    });

    after(async function () {
      await registry?.stop();
    });

    it('goes through 401 → anonymous pull token → retry with the token', async function () {
      const tokenService = registry.tokenService;
      assert.ok(tokenService);
      const anonymousBefore = tokenService.issued.filter((i) => i.anonymous).length;
      const counting = countingFetch();
      const client = createRegistryClient({ fetch: counting.fetch });
      const check = await client.imageExists(testContext(), `${registry.host}/siderolabs/installer:v1.13.2`);
      assert.equal(check.exists, true, check.detail);

      const manifestUrl = `${registry.url}/v2/siderolabs/installer/manifests/v1.13.2`;
      assert.deepEqual(
        counting.requests.map((r) => [r.method, r.url.split('?')[0], r.bearer]),
        [['HEAD', manifestUrl, false], ['GET', tokenService.realm, false], ['HEAD', manifestUrl, true]],
      );
      const anonymous = tokenService.issued.filter((i) => i.anonymous).slice(anonymousBefore);
      assert.deepEqual(anonymous, [{ scope: 'repository:siderolabs/installer:pull', granted: ['pull'], anonymous: true }]);

      // The token is reused for the same repository: a missing tag costs one request.
      const missing = await client.imageExists(testContext(), `${registry.host}/siderolabs/installer:v0.0.0`);
      assert.equal(missing.exists, false);
      assert.equal(counting.requests.length, 4);
      assert.equal(counting.requests[3]?.bearer, true);
    });
  });

  describe('failures', function () {
    let server: Server;
    let port: number;
    const sockets: Socket[] = [];

    before(async function () {
      // A loopback server that accepts connections and never answers.
      server = createServer((socket) => {
        sockets.push(socket);
        socket.on('error', () => undefined);
        socket.resume(); // read (and drop) the request, so the client's FIN is seen
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const address = server.address();
      assert.ok(address && typeof address === 'object');
      port = address.port;
    });

    after(async function () {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });

    it('aborting the context cancels a request the registry never answers', async function () {
      const ac = new AbortController();
      const before = sockets.length;
      const settled = rejection(createRegistryClient().imageExists(testContext({ signal: ac.signal }), `127.0.0.1:${port}/siderolabs/installer:v1.13.2`));
      await waitFor(() => sockets.length > before || undefined, { timeoutMs: 10_000, intervalMs: 10, description: 'the request to connect' });
      ac.abort();
      const err = await settled;
      assert.deepEqual([err.kind, err.reason], ['Transient', 'Canceled']);
      assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}/siderolabs/installer:v1\\.13\\.2 at http://127\\.0\\.0\\.1:${port}`));
      const socket = sockets[sockets.length - 1];
      await waitFor(() => socket?.readableEnded || undefined, { timeoutMs: 10_000, intervalMs: 10, description: 'the client to close its connection' });
    });

    it('the context deadline ends a request the registry never answers → Timeout', async function () {
      const err = await rejection(createRegistryClient().imageExists(testContext({ timeoutMs: 300 }), `127.0.0.1:${port}/siderolabs/installer:v1.13.2`));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'Timeout']);
    });

    it('a closed port → Transient NetworkError', async function () {
      const closed = await freePort();
      const err = await rejection(createRegistryClient({ mirrors: { 'ghcr.io': `http://127.0.0.1:${closed}` } }).imageExists(testContext(), 'ghcr.io/siderolabs/installer:v1.13.2'));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'NetworkError']);
      assert.match(err.message, /ECONNREFUSED/);
      assert.match(err.message, new RegExp(`mirror http://127\\.0\\.0\\.1:${closed} \\(for ghcr\\.io\\)`));
    });
  });
});
