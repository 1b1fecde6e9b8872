// The registry client against the lab's real registry (Debian's docker-registry on loopback):
// published and missing tags, the anonymous bearer-token flow, a mirror mapping, cancellation,
// the deadline and a closed port.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { installerImages } from '../../controller/preflight/run.js';
import { createRegistryClient } from '../../controller/registry/index.js';
import { freePort } from '../lab/net.js';
import { startRegistry, startRegistryFront, type Registry, type RegistryFront } from '../lab/registry/index.js';
import { waitFor } from '../lab/wait.js';
import { testContext } from '../support/op-context.js';
import { rejection } from '../support/outcome.js';

/** Records every request the client makes (method, URL, whether it carried a bearer token). */
function countingFetch(): { fetch: typeof fetch; requests: { method: string; url: string; bearer: boolean }[] } {
  const requests: { method: string; url: string; bearer: boolean }[] = [];
  const f: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    requests.push({
      method: init?.method ?? 'GET',
      url: input instanceof Request ? input.url : input.toString(),
      bearer: /^Bearer /.test(headers.get('authorization') ?? ''),
    });
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
      const check = await createRegistryClient().imageExists(
        testContext(),
        `${registry.host}/siderolabs/installer@${digest}`,
      );
      assert.equal(check.exists, true);
    });

    it('reports a tag that was never published as missing', async function () {
      const check = await createRegistryClient().imageExists(
        testContext(),
        `${registry.host}/siderolabs/installer:v9.9.9`,
      );
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
      assert.deepEqual(
        counting.requests.map((r) => [r.method, r.url]),
        [['HEAD', `${registry.url}/v2/siderolabs/installer/manifests/v1.13.2`]],
      );

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
        [
          ['HEAD', manifestUrl, false],
          ['GET', tokenService.realm, false],
          ['HEAD', manifestUrl, true],
        ],
      );
      const anonymous = tokenService.issued.filter((i) => i.anonymous).slice(anonymousBefore);
      assert.deepEqual(anonymous, [
        { scope: 'repository:siderolabs/installer:pull', granted: ['pull'], anonymous: true },
      ]);

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
      const settled = rejection(
        createRegistryClient().imageExists(
          testContext({ signal: ac.signal }),
          `127.0.0.1:${port}/siderolabs/installer:v1.13.2`,
        ),
      );
      await waitFor(() => sockets.length > before || undefined, {
        timeoutMs: 10_000,
        intervalMs: 10,
        description: 'the request to connect',
      });
      ac.abort();
      const err = await settled;
      assert.deepEqual([err.kind, err.reason], ['Transient', 'Canceled']);
      assert.match(
        err.message,
        new RegExp(`127\\.0\\.0\\.1:${port}/siderolabs/installer:v1\\.13\\.2 at http://127\\.0\\.0\\.1:${port}`),
      );
      const socket = sockets[sockets.length - 1];
      await waitFor(() => socket?.readableEnded || undefined, {
        timeoutMs: 10_000,
        intervalMs: 10,
        description: 'the client to close its connection',
      });
    });

    it('the context deadline ends a request the registry never answers → Timeout', async function () {
      const err = await rejection(
        createRegistryClient().imageExists(
          testContext({ timeoutMs: 300 }),
          `127.0.0.1:${port}/siderolabs/installer:v1.13.2`,
        ),
      );
      assert.deepEqual([err.kind, err.reason], ['Transient', 'Timeout']);
    });

    it('a closed port → Transient NetworkError', async function () {
      const closed = await freePort();
      const err = await rejection(
        createRegistryClient({ mirrors: { 'ghcr.io': `http://127.0.0.1:${closed}` } }).imageExists(
          testContext(),
          'ghcr.io/siderolabs/installer:v1.13.2',
        ),
      );
      assert.deepEqual([err.kind, err.reason], ['Transient', 'NetworkError']);
      assert.match(err.message, /ECONNREFUSED/);
      assert.match(err.message, new RegExp(`mirror http://127\\.0\\.0\\.1:${closed} \\(for ghcr\\.io\\)`));
    });
  });

  describe('malformed answers (the lab registry, with token auth, behind its fault front)', function () {
    let registry: Registry;
    let front: RegistryFront;
    const image = 'ghcr.io/siderolabs/installer:v1.13.2';
    const manifest = /^\/v2\/siderolabs\/installer\/manifests\/v1\.13\.2$/;
    const html = '<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>';
    const client = () => createRegistryClient({ mirrors: { 'ghcr.io': front.url } });
    const where = () =>
      `checking image ghcr\\.io/siderolabs/installer:v1\\.13\\.2 at mirror ${front.url.replaceAll('.', '\\.')} \\(for ghcr\\.io\\)`;

    before(async function () {
      registry = await startRegistry({ tokenAuth: true });
      await registry.publish('siderolabs/installer', 'v1.13.2');
      front = await startRegistryFront(registry.url);
    });
    after(async function () {
      await front?.stop();
      await registry?.stop();
    });
    afterEach(function () {
      front.inject();
      registry.tokenService?.injectFault(undefined);
    });

    it('a manifest answered 200 with an HTML page or a wrong content type is never taken for the image: Transient RegistryBadResponse naming image and registry', async function () {
      for (const contentType of ['text/html; charset=utf-8', 'text/plain']) {
        front.inject({ path: manifest, status: 200, contentType, body: html });
        const err = await rejection(client().imageExists(testContext(), image));
        assert.deepEqual([err.kind, err.reason], ['Transient', 'RegistryBadResponse'], err.message);
        assert.match(
          err.message,
          new RegExp(
            `^${where()}: the registry answered HTTP 200 with ${contentType.split(';')[0]}, not an image manifest; is ${front.url.replaceAll('.', '\\.')} a container registry \\(check --registry-mirror\\)\\?$`,
          ),
        );
      }
      front.inject();
      assert.equal(
        (await client().imageExists(testContext(), image)).exists,
        true,
        'found once the registry answers properly',
      );
    });

    it('the token endpoint answers garbage JSON, wrong types, HTML or 20 MB: Transient RegistryBadResponse naming the token service', async function () {
      const tokens = registry.tokenService;
      assert.ok(tokens);
      const cases: { fault: Parameters<typeof tokens.injectFault>[0]; says: string }[] = [
        {
          fault: { status: 200, contentType: 'application/json', body: '{"token": ' },
          says: 'answered something that is not JSON',
        },
        {
          fault: { status: 200, contentType: 'application/json', body: '{"token": 42, "access_token": ["x"]}' },
          says: 'answered without a token',
        },
        { fault: { status: 200, contentType: 'text/html', body: html }, says: 'answered something that is not JSON' },
        {
          fault: { status: 200, contentType: 'application/json', body: { bytes: 20 * 1024 * 1024 } },
          says: 'answered something that is not JSON',
        },
      ];
      for (const c of cases) {
        tokens.injectFault(c.fault);
        // A fresh client each time: no cached token.
        const err = await rejection(client().imageExists(testContext(), image));
        assert.deepEqual([err.kind, err.reason], ['Transient', 'RegistryBadResponse'], err.message);
        assert.equal(err.message, `${where().replaceAll('\\', '')}: the token service ${tokens.realm} ${c.says}`);
      }
    });

    it('HEAD not allowed, then a GET answered 404 with a 20 MB body: the body is not read whole, the image reported missing', async function () {
      front.inject(
        { path: manifest, method: 'HEAD', status: 405, contentType: 'text/plain', body: '' },
        {
          path: manifest,
          method: 'GET',
          status: 404,
          contentType: 'application/json',
          body: { bytes: 20 * 1024 * 1024 },
        },
      );
      const check = await client().imageExists(testContext(), image);
      assert.equal(check.exists, false);
      assert.match(
        check.detail,
        new RegExp(`not found at mirror ${front.url.replaceAll('.', '\\.')} \\(for ghcr\\.io\\): HTTP 404$`),
      );
      // The client stops reading after 64 KiB and closes: the front could not send it all (only what socket buffers took).
      const get = await waitFor(() => front.requests.find((r) => r.method === 'GET' && r.bytesSent > 0), {
        timeoutMs: 10_000,
        description: 'the GET to close',
      });
      assert.ok(get.bytesSent < 20 * 1024 * 1024, `${get.bytesSent} bytes sent`);
    });

    it('the preflight says the installer image could not be checked, naming registry and image (not "not found")', async function () {
      front.inject({ path: manifest, status: 200, contentType: 'text/html', body: html });
      const check = await installerImages(testContext(), client(), new Map([[image, ['w-1', 'w-2']]]));
      assert.equal(check.passed, false);
      assert.match(
        check.message,
        new RegExp(
          `^installer image could not be checked: ${where()}: the registry answered HTTP 200 with text/html, not an image manifest`,
        ),
      );
      assert.ok(!check.message.includes('not found'), check.message);
    });
  });
});
