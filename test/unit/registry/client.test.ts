// The registry client against a scripted fetch: every status a registry or the Image Factory
// answers, the token flow, mirrors, cancellation and the deadline — no network, fixed clock.
import assert from 'node:assert/strict';
import type { Clock } from '../../../controller/runtime/clock.js';
import { rootContext, type OpContext } from '../../../controller/runtime/context.js';
import { createRegistryClient, type RegistryClientOptions } from '../../../controller/registry/index.js';
import { rejection } from '../../support/outcome.js';
import { CHALLENGE, scripted, status, TOKEN, tokenResponse, type Step } from './scripted-fetch.js';

const NOW = Date.parse('2026-05-01T12:00:00Z');
const SCHEMATIC = '376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba';
const GHCR = 'ghcr.io/siderolabs/installer:v1.13.2';
const GHCR_URL = 'https://ghcr.io/v2/siderolabs/installer/manifests/v1.13.2';

/** Never answers; rejects with the signal's reason when the request is aborted. */
const hang: Step = (call) =>
  new Promise<Response>((_resolve, reject) => {
    const signal = call.signal;
    if (!signal) throw new Error('request without a signal');
    signal.addEventListener(
      'abort',
      () => reject(signal.reason instanceof Error ? signal.reason : new DOMException('aborted', 'AbortError')),
      { once: true },
    );
  });

/** A clock stuck at NOW whose sleeps end only when the test calls fire() (or they are aborted). */
function manualClock(): Clock & { fire(): void; sleeping(): number } {
  const sleepers: (() => void)[] = [];
  return {
    now: () => NOW,
    sleep: (_ms, signal) =>
      new Promise<void>((resolve, reject) => {
        const wake = (): void => resolve();
        sleepers.push(wake);
        signal?.addEventListener(
          'abort',
          () => {
            sleepers.splice(sleepers.indexOf(wake), 1);
            reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
          },
          { once: true },
        );
      }),
    fire: () => {
      for (const wake of sleepers.splice(0)) wake();
    },
    sleeping: () => sleepers.length,
  };
}

function ctx(opts: { clock?: Clock; signal?: AbortSignal; timeoutMs?: number } = {}): OpContext {
  return rootContext(
    opts.clock ?? manualClock(),
    opts.signal ?? new AbortController().signal,
    opts.timeoutMs ?? 60_000,
  );
}

function client(f: typeof fetch, extra: Omit<RegistryClientOptions, 'fetch'> = {}) {
  return createRegistryClient({ fetch: f, ...extra });
}

describe('registry/client', function () {
  describe('manifest requests', function () {
    it('HEADs the manifest with the OCI and Docker Accept types, without following redirects', async function () {
      const s = scripted(status(200, { 'docker-content-digest': `sha256:${'1'.repeat(64)}` }));
      const check = await client(s.fetch, { userAgent: 'kp-test/1' }).imageExists(ctx(), GHCR);
      assert.deepEqual(check, {
        image: GHCR,
        exists: true,
        checkedAt: 'https://ghcr.io',
        detail: `${GHCR} found at https://ghcr.io: HTTP 200, digest sha256:${'1'.repeat(64)}`,
      });
      const [call] = s.calls;
      assert.ok(call);
      assert.deepEqual([call.method, call.url, call.redirect], ['HEAD', GHCR_URL, 'manual']);
      const accept = call.headers.get('accept') ?? '';
      for (const type of [
        'application/vnd.oci.image.index.v1+json',
        'application/vnd.oci.image.manifest.v1+json',
        'application/vnd.docker.distribution.manifest.list.v2+json',
        'application/vnd.docker.distribution.manifest.v2+json',
      ])
        assert.ok(accept.includes(type), `Accept has ${type}: ${accept}`);
      assert.equal(call.headers.get('user-agent'), 'kp-test/1');
      assert.equal(call.headers.get('authorization'), null);
    });

    it('reports a 404 as not existing', async function () {
      const s = scripted(status(404));
      const check = await client(s.fetch).imageExists(ctx(), GHCR);
      assert.equal(check.exists, false);
      assert.equal(check.checkedAt, 'https://ghcr.io');
      assert.match(check.detail, /not found at https:\/\/ghcr\.io: HTTP 404/);
    });

    it('falls back to GET when HEAD answers 405, and reads the registry error code of a 404', async function () {
      const s = scripted(
        status(405),
        status(
          404,
          { 'content-type': 'application/json' },
          JSON.stringify({ errors: [{ code: 'MANIFEST_UNKNOWN', message: 'manifest unknown' }] }),
        ),
      );
      const check = await client(s.fetch).imageExists(ctx(), GHCR);
      assert.equal(check.exists, false);
      assert.match(check.detail, /HTTP 404 MANIFEST_UNKNOWN/);
      assert.deepEqual(
        s.calls.map((c) => [c.method, c.url]),
        [
          ['HEAD', GHCR_URL],
          ['GET', GHCR_URL],
        ],
      );
    });

    it('HEAD 405 → GET 200 exists', async function () {
      const s = scripted(
        status(405),
        status(200, { 'content-type': 'application/vnd.oci.image.index.v1+json' }, '{"schemaVersion":2}'),
      );
      const check = await client(s.fetch).imageExists(ctx(), GHCR);
      assert.equal(check.exists, true);
      assert.deepEqual(
        s.calls.map((c) => c.method),
        ['HEAD', 'GET'],
      );
    });

    for (const code of [301, 302, 303, 307, 308]) {
      it(`counts a ${code} redirect as found and does not follow it`, async function () {
        const image = `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.13.2`;
        const s = scripted(
          status(code, {
            location: 'https://ghcr.io/v2/siderolabs/installer-base/manifests/sha256:abc?X-Signature=s3cret',
          }),
        );
        const check = await client(s.fetch).imageExists(ctx(), image);
        assert.equal(check.exists, true);
        assert.equal(check.checkedAt, 'https://factory.talos.dev');
        assert.match(check.detail, new RegExp(`HTTP ${code} redirect to ghcr\\.io \\(not followed\\)`));
        assert.doesNotMatch(check.detail, /s3cret/);
        assert.equal(s.calls.length, 1);
        assert.equal(s.calls[0]?.url, `https://factory.talos.dev/v2/metal-installer/${SCHEMATIC}/manifests/v1.13.2`);
        assert.equal(s.calls[0]?.redirect, 'manual');
      });
    }

    it('asks for a digest by digest', async function () {
      const digest = `sha256:${'b'.repeat(64)}`;
      const s = scripted(status(200));
      await client(s.fetch).imageExists(ctx(), `ghcr.io/siderolabs/installer:v1.13.2@${digest}`);
      assert.equal(s.calls[0]?.url, `https://ghcr.io/v2/siderolabs/installer/manifests/${digest}`);
    });

    const bases: [string, string][] = [
      ['127.0.0.1:5000/siderolabs/installer:v1', 'http://127.0.0.1:5000/v2/siderolabs/installer/manifests/v1'],
      ['localhost:5000/a:b', 'http://localhost:5000/v2/a/manifests/b'],
      ['registry.example.com:8443/a/b:c', 'https://registry.example.com:8443/v2/a/b/manifests/c'],
      ['10.0.0.5:5000/a:b', 'https://10.0.0.5:5000/v2/a/manifests/b'],
      ['docker.io/alpine:3', 'https://registry-1.docker.io/v2/library/alpine/manifests/3'],
    ];
    for (const [image, url] of bases) {
      it(`asks ${url} for ${image}`, async function () {
        const s = scripted(status(200));
        await client(s.fetch).imageExists(ctx(), image);
        assert.equal(s.calls[0]?.url, url);
      });
    }
  });

  describe('anonymous bearer tokens', function () {
    it('on a 401 challenge fetches a token for the scope and retries once with it', async function () {
      const s = scripted(status(401, { 'www-authenticate': CHALLENGE }), tokenResponse(), status(200));
      const check = await client(s.fetch).imageExists(ctx(), GHCR);
      assert.equal(check.exists, true);
      assert.equal(s.calls.length, 3);
      const tokenCall = s.calls[1];
      assert.ok(tokenCall);
      const url = new URL(tokenCall.url);
      assert.equal(`${url.origin}${url.pathname}`, 'https://ghcr.io/token');
      assert.equal(url.searchParams.get('service'), 'ghcr.io');
      assert.equal(url.searchParams.get('scope'), 'repository:siderolabs/installer:pull');
      assert.equal(tokenCall.headers.get('authorization'), null);
      assert.equal(s.calls[2]?.headers.get('authorization'), `Bearer ${TOKEN}`);
      assert.doesNotMatch(check.detail + check.checkedAt, new RegExp(TOKEN));
    });

    it('reads access_token when there is no token, and asks for pull of the repository when the challenge names no scope', async function () {
      const s = scripted(
        status(401, { 'www-authenticate': 'Bearer realm="https://auth.example.com/token"' }),
        tokenResponse({ access_token: TOKEN }),
        status(404),
      );
      const check = await client(s.fetch).imageExists(ctx(), GHCR);
      assert.equal(check.exists, false);
      assert.equal(new URL(s.calls[1]?.url ?? '').searchParams.get('scope'), 'repository:siderolabs/installer:pull');
      assert.equal(s.calls[2]?.headers.get('authorization'), `Bearer ${TOKEN}`);
    });

    it('reuses the token for the next check of the same repository', async function () {
      const s = scripted(status(401, { 'www-authenticate': CHALLENGE }), tokenResponse(), status(200), status(404));
      const c = client(s.fetch);
      await c.imageExists(ctx(), GHCR);
      const second = await c.imageExists(ctx(), 'ghcr.io/siderolabs/installer:v1.13.3');
      assert.equal(second.exists, false);
      assert.equal(s.calls.length, 4);
      assert.equal(s.calls[3]?.headers.get('authorization'), `Bearer ${TOKEN}`);
    });

    it('fetches a new token when the cached one is refused', async function () {
      const s = scripted(
        status(401, { 'www-authenticate': CHALLENGE }),
        tokenResponse(),
        status(200),
        status(401, { 'www-authenticate': CHALLENGE }),
        tokenResponse({ token: 'tok-2' }),
        status(200),
      );
      const c = client(s.fetch);
      await c.imageExists(ctx(), GHCR);
      assert.equal((await c.imageExists(ctx(), GHCR)).exists, true);
      assert.equal(s.calls[5]?.headers.get('authorization'), 'Bearer tok-2');
    });

    it('401 twice → Stalled RegistryAuthFailed, naming image and registry, never the token', async function () {
      const s = scripted(
        status(401, { 'www-authenticate': CHALLENGE }),
        tokenResponse(),
        status(401, { 'www-authenticate': `${CHALLENGE},error="insufficient_scope"` }),
      );
      const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
      assert.deepEqual([err.kind, err.reason, err.code], ['Stalled', 'RegistryAuthFailed', 401]);
      assert.match(err.message, /ghcr\.io\/siderolabs\/installer:v1\.13\.2/);
      assert.match(err.message, /https:\/\/ghcr\.io/);
      assert.match(err.message, /anonymous pull token.*make sure the image name is right and the repository is public/);
      assert.doesNotMatch(err.message, new RegExp(TOKEN));
      assert.equal(s.calls.length, 3, 'one retry only');
    });

    it('403 → Stalled RegistryAuthFailed', async function () {
      const s = scripted(status(403));
      const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
      assert.deepEqual([err.kind, err.reason, err.code], ['Stalled', 'RegistryAuthFailed', 403]);
      assert.match(err.message, /HTTP 403 to an anonymous request/);
    });

    it('a Basic challenge (no anonymous flow) → Stalled RegistryAuthFailed saying so', async function () {
      const s = scripted(status(401, { 'www-authenticate': 'Basic realm="Image Factory"' }));
      const err = await rejection(
        client(s.fetch).imageExists(ctx(), `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.13.2`),
      );
      assert.deepEqual([err.kind, err.reason], ['Stalled', 'RegistryAuthFailed']);
      assert.match(err.message, /asks for Basic credentials/);
      assert.equal(s.calls.length, 1);
    });

    it('a token service that refuses anonymous tokens → Stalled RegistryAuthFailed', async function () {
      const s = scripted(status(401, { 'www-authenticate': CHALLENGE }), status(401));
      const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
      assert.deepEqual([err.kind, err.reason], ['Stalled', 'RegistryAuthFailed']);
      assert.match(err.message, /token service https:\/\/ghcr\.io\/token refused an anonymous pull token/);
    });

    it('a token service that fails with 503 → Transient', async function () {
      const s = scripted(status(401, { 'www-authenticate': CHALLENGE }), status(503));
      const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'RegistryUnavailable']);
    });

    it('a token answer without a token → Transient RegistryBadResponse', async function () {
      const s = scripted(status(401, { 'www-authenticate': CHALLENGE }), tokenResponse({ nope: 1 }));
      const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'RegistryBadResponse']);
    });

    it('refuses a plain-http token realm on another host', async function () {
      const s = scripted(
        status(401, { 'www-authenticate': 'Bearer realm="http://auth.example.com/token",service="x"' }),
      );
      const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
      assert.deepEqual([err.kind, err.reason], ['Stalled', 'RegistryAuthFailed']);
      assert.match(err.message, /token realm http:\/\/auth\.example\.com\/token is not https/);
      assert.equal(s.calls.length, 1);
    });
  });

  describe('errors', function () {
    it('429 with Retry-After seconds → Waiting with retryAfterMs', async function () {
      const s = scripted(status(429, { 'retry-after': '7' }));
      const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
      assert.deepEqual([err.kind, err.reason, err.code, err.retryAfterMs], ['Waiting', 'TooManyRequests', 429, 7000]);
      assert.match(err.message, /ghcr\.io\/siderolabs\/installer:v1\.13\.2 at https:\/\/ghcr\.io/);
    });

    it('429 with a Retry-After date → Waiting until then (by the context clock)', async function () {
      const s = scripted(status(429, { 'retry-after': new Date(NOW + 90_000).toUTCString() }));
      const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
      assert.deepEqual([err.kind, err.retryAfterMs], ['Waiting', 90_000]);
    });

    it('429 without Retry-After → Transient', async function () {
      const s = scripted(status(429));
      const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
      assert.deepEqual([err.kind, err.reason, err.retryAfterMs], ['Transient', 'TooManyRequests', undefined]);
    });

    for (const code of [500, 502, 503]) {
      it(`${code} → Transient RegistryUnavailable`, async function () {
        const s = scripted(status(code));
        const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
        assert.deepEqual([err.kind, err.reason, err.code], ['Transient', 'RegistryUnavailable', code]);
      });
    }

    it('400 → Stalled RegistryRejected', async function () {
      const s = scripted(status(400));
      const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
      assert.deepEqual([err.kind, err.reason, err.code], ['Stalled', 'RegistryRejected', 400]);
    });

    it('a network failure → Transient NetworkError with the cause', async function () {
      const s = scripted(() => {
        throw new TypeError('fetch failed', {
          cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }),
        });
      });
      const err = await rejection(client(s.fetch).imageExists(ctx(), GHCR));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'NetworkError']);
      assert.match(err.message, /https:\/\/ghcr\.io: connect ECONNREFUSED/);
    });

    it('an invalid reference → Stalled InvalidImageReference without a request', async function () {
      const s = scripted();
      const err = await rejection(client(s.fetch).imageExists(ctx(), 'siderolabs/installer:v1.13.2'));
      assert.deepEqual([err.kind, err.reason], ['Stalled', 'InvalidImageReference']);
      assert.match(err.message, /"siderolabs\/installer:v1\.13\.2".*no registry host/);
      assert.equal(s.calls.length, 0);
    });
  });

  describe('cancellation and deadline', function () {
    it('an already aborted context → Canceled without a request', async function () {
      const ac = new AbortController();
      ac.abort();
      const s = scripted();
      const err = await rejection(client(s.fetch).imageExists(ctx({ signal: ac.signal }), GHCR));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'Canceled']);
      assert.equal(s.calls.length, 0);
    });

    it('aborting the context cancels the request in flight → Canceled', async function () {
      const ac = new AbortController();
      const s = scripted(hang);
      const p = client(s.fetch).imageExists(ctx({ signal: ac.signal }), GHCR);
      const settled = rejection(p);
      await waitUntil(() => s.calls.length === 1);
      assert.equal(s.calls[0]?.signal?.aborted, false);
      ac.abort();
      const err = await settled;
      assert.deepEqual([err.kind, err.reason], ['Transient', 'Canceled']);
      assert.equal(s.calls[0]?.signal?.aborted, true);
    });

    it('aborting during the token request cancels it too', async function () {
      const ac = new AbortController();
      const s = scripted(status(401, { 'www-authenticate': CHALLENGE }), hang);
      const settled = rejection(client(s.fetch).imageExists(ctx({ signal: ac.signal }), GHCR));
      await waitUntil(() => s.calls.length === 2);
      ac.abort();
      assert.deepEqual([(await settled).reason], ['Canceled']);
      assert.equal(s.calls[1]?.signal?.aborted, true);
    });

    it('the context deadline (by its clock) aborts the request → Timeout', async function () {
      const clock = manualClock();
      const s = scripted(hang);
      const settled = rejection(client(s.fetch).imageExists(ctx({ clock, timeoutMs: 5_000 }), GHCR));
      await waitUntil(() => s.calls.length === 1 && clock.sleeping() === 1);
      clock.fire();
      const err = await settled;
      assert.deepEqual([err.kind, err.reason], ['Transient', 'Timeout']);
      assert.match(err.message, /deadline exceeded/);
    });

    it('a deadline already passed → Timeout without a request', async function () {
      const s = scripted();
      const err = await rejection(client(s.fetch).imageExists(ctx({ timeoutMs: 0 }), GHCR));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'Timeout']);
      assert.equal(s.calls.length, 0);
    });

    it('stops its deadline timer when the check ends', async function () {
      const clock = manualClock();
      const s = scripted(status(200));
      await client(s.fetch).imageExists(ctx({ clock }), GHCR);
      assert.equal(clock.sleeping(), 0);
    });
  });

  describe('mirrors', function () {
    it('checks the mirror for a mapped registry host and says so', async function () {
      const s = scripted(status(200));
      const check = await client(s.fetch, { mirrors: { 'ghcr.io': 'http://127.0.0.1:5000/' } }).imageExists(
        ctx(),
        GHCR,
      );
      assert.equal(s.calls[0]?.url, 'http://127.0.0.1:5000/v2/siderolabs/installer/manifests/v1.13.2');
      assert.equal(check.checkedAt, 'http://127.0.0.1:5000');
      assert.match(check.detail, /found at mirror http:\/\/127\.0\.0\.1:5000 \(for ghcr\.io\)/);
    });

    it('leaves other registries alone', async function () {
      const s = scripted(status(200));
      await client(s.fetch, { mirrors: { 'ghcr.io': 'https://mirror.example.com' } }).imageExists(
        ctx(),
        `factory.talos.dev/metal-installer/${SCHEMATIC}:v1.13.2`,
      );
      assert.match(s.calls[0]?.url ?? '', /^https:\/\/factory\.talos\.dev\/v2\//);
    });

    it('names the mirror in errors', async function () {
      const s = scripted(status(503));
      const err = await rejection(
        client(s.fetch, { mirrors: { 'ghcr.io': 'https://mirror.example.com' } }).imageExists(ctx(), GHCR),
      );
      assert.match(err.message, /at mirror https:\/\/mirror\.example\.com \(for ghcr\.io\)/);
    });

    it('refuses a plain-http mirror off loopback when the client is created', function () {
      assert.throws(
        () => createRegistryClient({ mirrors: { 'ghcr.io': 'http://mirror.example.com' } }),
        /plain http is allowed only to loopback/,
      );
    });
  });
});

/** Lets queued promise callbacks run until `cond` holds (no timers: nothing here waits on real time). */
async function waitUntil(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise<void>((resolve) => setImmediate(resolve));
  assert.ok(cond(), 'condition never held');
}
