// listTags against a scripted fetch: GET /v2/<repository>/tags/list, the token flow, Link pagination
// (same origin only, at most MAX_TAG_PAGES pages), mirrors and bad answers — no network, fixed clock.
import assert from 'node:assert/strict';
import type { Clock } from '../../../controller/runtime/clock.js';
import { rootContext, type OpContext } from '../../../controller/runtime/context.js';
import {
  createRegistryClient,
  MAX_TAG_PAGES,
  type RegistryClientOptions,
} from '../../../controller/registry/client.js';
import { rejection } from '../../support/outcome.js';
import { CHALLENGE, scripted, status, TOKEN, tokenResponse, type Step } from './scripted-fetch.js';

const NOW = Date.parse('2026-05-01T12:00:00Z');
const REPO = 'ghcr.io/siderolabs/installer';
const LIST_URL = 'https://ghcr.io/v2/siderolabs/installer/tags/list?n=1000';

/** A tag list page; `next` becomes a `Link: <next>; rel="next"` header. */
const page =
  (tags: unknown, next?: string, name = 'siderolabs/installer'): Step =>
  () =>
    new Response(JSON.stringify({ name, tags }), {
      status: 200,
      headers: { 'content-type': 'application/json', ...(next === undefined ? {} : { link: `<${next}>; rel="next"` }) },
    });

const clock: Clock = {
  now: () => NOW,
  sleep: (_ms, signal) =>
    new Promise<void>((_resolve, reject) =>
      signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
    ),
};

function ctx(): OpContext {
  return rootContext(clock, new AbortController().signal, 60_000);
}

function client(f: typeof fetch, extra: Omit<RegistryClientOptions, 'fetch'> = {}) {
  return createRegistryClient({ fetch: f, ...extra });
}

describe('registry/client listTags', function () {
  it('GETs /tags/list?n=1000 as JSON and returns the tags with where it asked', async function () {
    const s = scripted(page(['v1.12.4', 'v1.13.2']));
    const list = await client(s.fetch, { userAgent: 'kp-test/1' }).listTags(ctx(), REPO);
    assert.deepEqual(list, {
      repository: REPO,
      tags: ['v1.12.4', 'v1.13.2'],
      checkedAt: 'https://ghcr.io',
      truncated: false,
    });
    assert.equal(s.calls.length, 1);
    const [call] = s.calls;
    assert.ok(call);
    assert.deepEqual([call.method, call.url, call.redirect], ['GET', LIST_URL, 'manual']);
    assert.equal(call.headers.get('accept'), 'application/json');
    assert.equal(call.headers.get('user-agent'), 'kp-test/1');
    assert.equal(call.headers.get('authorization'), null);
  });

  it('skips tags that are not strings, and takes "tags": null for none', async function () {
    const s = scripted(page(['v1', 7, null, { tag: 'x' }, 'v2']), page(null));
    const c = client(s.fetch);
    assert.deepEqual((await c.listTags(ctx(), REPO)).tags, ['v1', 'v2']);
    assert.deepEqual((await c.listTags(ctx(), REPO)).tags, []);
  });

  it('asks loopback registries over http and Docker Hub at registry-1 under library/', async function () {
    const s = scripted(page(['a']), page(['b']));
    const c = client(s.fetch);
    assert.equal((await c.listTags(ctx(), '127.0.0.1:5000/siderolabs/kubelet')).checkedAt, 'http://127.0.0.1:5000');
    await c.listTags(ctx(), 'docker.io/alpine');
    assert.deepEqual(
      s.calls.map((c) => c.url),
      [
        'http://127.0.0.1:5000/v2/siderolabs/kubelet/tags/list?n=1000',
        'https://registry-1.docker.io/v2/library/alpine/tags/list?n=1000',
      ],
    );
  });

  describe('anonymous bearer tokens', function () {
    it('on a 401 challenge fetches a pull token and lists with it; the token is never in the result', async function () {
      const s = scripted(status(401, { 'www-authenticate': CHALLENGE }), tokenResponse(), page(['v1.13.2']));
      const list = await client(s.fetch).listTags(ctx(), REPO);
      assert.deepEqual(list.tags, ['v1.13.2']);
      assert.equal(s.calls.length, 3);
      const tokenUrl = new URL(s.calls[1]?.url ?? '');
      assert.equal(`${tokenUrl.origin}${tokenUrl.pathname}`, 'https://ghcr.io/token');
      assert.equal(tokenUrl.searchParams.get('scope'), 'repository:siderolabs/installer:pull');
      assert.equal(s.calls[2]?.url, LIST_URL);
      assert.equal(s.calls[2]?.headers.get('authorization'), `Bearer ${TOKEN}`);
      assert.doesNotMatch(JSON.stringify(list), new RegExp(TOKEN));
    });

    it('shares the token cache with imageExists for the same repository', async function () {
      const s = scripted(status(401, { 'www-authenticate': CHALLENGE }), tokenResponse(), status(200), page(['v1']));
      const c = client(s.fetch);
      await c.imageExists(ctx(), `${REPO}:v1`);
      await c.listTags(ctx(), REPO);
      assert.equal(s.calls.length, 4);
      assert.equal(s.calls[3]?.headers.get('authorization'), `Bearer ${TOKEN}`);
    });

    it('401 with the fresh token → Stalled RegistryAuthFailed, listing tags of the repository, never the token', async function () {
      const s = scripted(
        status(401, { 'www-authenticate': CHALLENGE }),
        tokenResponse(),
        status(401, { 'www-authenticate': CHALLENGE }),
      );
      const err = await rejection(client(s.fetch).listTags(ctx(), REPO));
      assert.deepEqual([err.kind, err.reason, err.code], ['Stalled', 'RegistryAuthFailed', 401]);
      assert.match(
        err.message,
        /^listing tags of ghcr\.io\/siderolabs\/installer at https:\/\/ghcr\.io: HTTP 401 with an anonymous pull token/,
      );
      assert.doesNotMatch(err.message, new RegExp(TOKEN));
      assert.equal(s.calls.length, 3, 'one retry only');
    });
  });

  describe('pagination', function () {
    it('follows a relative Link rel="next" to the second page and joins the tags', async function () {
      const next = '/v2/siderolabs/installer/tags/list?n=1000&last=v1.12.4';
      const s = scripted(page(['v1.12.3', 'v1.12.4'], next), page(['v1.13.2']));
      const list = await client(s.fetch).listTags(ctx(), REPO);
      assert.deepEqual(list, {
        repository: REPO,
        tags: ['v1.12.3', 'v1.12.4', 'v1.13.2'],
        checkedAt: 'https://ghcr.io',
        truncated: false,
      });
      assert.deepEqual(
        s.calls.map((c) => c.url),
        [LIST_URL, `https://ghcr.io${next}`],
      );
    });

    it('finds rel="next" among other links and carries the token to the next page', async function () {
      const s = scripted(
        status(401, { 'www-authenticate': CHALLENGE }),
        tokenResponse(),
        () =>
          new Response(JSON.stringify({ name: 'siderolabs/installer', tags: ['a'] }), {
            status: 200,
            headers: {
              link: '<https://ghcr.io/v2/siderolabs/installer/tags/list?n=1>; rel="first", <https://ghcr.io/v2/siderolabs/installer/tags/list?n=1000&last=a>; rel="next"',
            },
          }),
        page(['b']),
      );
      const list = await client(s.fetch).listTags(ctx(), REPO);
      assert.deepEqual(list.tags, ['a', 'b']);
      assert.equal(s.calls[3]?.url, 'https://ghcr.io/v2/siderolabs/installer/tags/list?n=1000&last=a');
      assert.equal(s.calls[3]?.headers.get('authorization'), `Bearer ${TOKEN}`);
    });

    for (const [what, link] of [
      ['another host', 'https://evil.example.com/v2/siderolabs/installer/tags/list?n=1000&last=a'],
      ['plain http on the same host', 'http://ghcr.io/v2/siderolabs/installer/tags/list?n=1000&last=a'],
      ['another port', 'https://ghcr.io:8443/v2/siderolabs/installer/tags/list?n=1000&last=a'],
      ['a protocol-relative URL to another host', '//evil.example.com/v2/x?last=a'],
    ] as const) {
      it(`refuses a Link to ${what} → Stalled RegistryBadResponse, without requesting it`, async function () {
        const s = scripted(status(401, { 'www-authenticate': CHALLENGE }), tokenResponse(), page(['a'], link));
        const err = await rejection(client(s.fetch).listTags(ctx(), REPO));
        assert.deepEqual([err.kind, err.reason], ['Stalled', 'RegistryBadResponse']);
        assert.match(
          err.message,
          /^listing tags of ghcr\.io\/siderolabs\/installer at https:\/\/ghcr\.io: .*next-page Link points to .*, not https:\/\/ghcr\.io; refusing/,
        );
        assert.doesNotMatch(err.message, /last=a/);
        assert.equal(s.calls.length, 3, 'the other origin is never asked');
      });
    }

    it(`stops after ${MAX_TAG_PAGES} pages and says the list is truncated`, async function () {
      const steps = Array.from({ length: MAX_TAG_PAGES }, (_, i) =>
        page([`t${i}`], `/v2/siderolabs/installer/tags/list?n=1000&last=t${i}`),
      );
      const s = scripted(...steps);
      const list = await client(s.fetch).listTags(ctx(), REPO);
      assert.equal(list.truncated, true);
      assert.equal(list.tags.length, MAX_TAG_PAGES);
      assert.equal(list.tags.at(-1), `t${MAX_TAG_PAGES - 1}`);
      assert.equal(s.calls.length, MAX_TAG_PAGES);
    });

    it(`is not truncated when page ${MAX_TAG_PAGES} is the last`, async function () {
      const steps = Array.from({ length: MAX_TAG_PAGES }, (_, i) =>
        page([`t${i}`], i < MAX_TAG_PAGES - 1 ? `/v2/siderolabs/installer/tags/list?n=1000&last=t${i}` : undefined),
      );
      const list = await client(scripted(...steps).fetch).listTags(ctx(), REPO);
      assert.deepEqual([list.truncated, list.tags.length], [false, MAX_TAG_PAGES]);
    });
  });

  describe('errors', function () {
    it('404 → Stalled RepositoryNotFound naming the repository and where, with the registry code', async function () {
      const s = scripted(
        status(
          404,
          { 'content-type': 'application/json' },
          JSON.stringify({ errors: [{ code: 'NAME_UNKNOWN', message: 'repository name not known to registry' }] }),
        ),
      );
      const err = await rejection(client(s.fetch).listTags(ctx(), 'ghcr.io/siderolabs/instaler'));
      assert.deepEqual([err.kind, err.reason, err.code], ['Stalled', 'RepositoryNotFound', 404]);
      assert.match(
        err.message,
        /^listing tags of ghcr\.io\/siderolabs\/instaler at https:\/\/ghcr\.io: HTTP 404 NAME_UNKNOWN/,
      );
      assert.match(err.message, /check the image name or --registry-mirror/);
    });

    it('an HTML page with 200 → Transient RegistryBadResponse saying what came', async function () {
      const s = scripted(
        status(200, { 'content-type': 'text/html; charset=utf-8' }, '<!doctype html><html><body>Welcome</body></html>'),
      );
      const err = await rejection(client(s.fetch).listTags(ctx(), REPO));
      assert.deepEqual([err.kind, err.reason, err.code], ['Transient', 'RegistryBadResponse', 200]);
      assert.match(err.message, /^listing tags of .* HTTP 200 with text\/html, not a JSON tag list/);
    });

    for (const [what, body] of [
      ['no tags field', '{"name":"siderolabs/installer"}'],
      ['tags that are not a list', '{"name":"siderolabs/installer","tags":"v1"}'],
      ['a JSON list', '["v1"]'],
    ] as const) {
      it(`JSON with ${what} → Transient RegistryBadResponse`, async function () {
        const s = scripted(status(200, { 'content-type': 'application/json' }, body));
        const err = await rejection(client(s.fetch).listTags(ctx(), REPO));
        assert.deepEqual([err.kind, err.reason], ['Transient', 'RegistryBadResponse']);
      });
    }

    it('a body over 1 MiB → Transient RegistryBadResponse saying so', async function () {
      const big = JSON.stringify({
        name: 'siderolabs/installer',
        tags: Array.from({ length: 120_000 }, (_, i) => `v0.0.${i}`),
      });
      assert.ok(big.length > 1024 * 1024);
      const s = scripted(status(200, { 'content-type': 'application/json' }, big));
      const err = await rejection(client(s.fetch).listTags(ctx(), REPO));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'RegistryBadResponse']);
      assert.match(err.message, /more than 1 MiB/);
    });

    it('503 → Transient RegistryUnavailable; a network failure → NetworkError, both as listing tags', async function () {
      const s = scripted(status(503), () => {
        throw new TypeError('fetch failed', {
          cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
        });
      });
      const c = client(s.fetch);
      const unavailable = await rejection(c.listTags(ctx(), REPO));
      assert.deepEqual(
        [unavailable.kind, unavailable.reason, unavailable.code],
        ['Transient', 'RegistryUnavailable', 503],
      );
      const network = await rejection(c.listTags(ctx(), REPO));
      assert.deepEqual([network.kind, network.reason], ['Transient', 'NetworkError']);
      assert.match(
        network.message,
        /^listing tags of ghcr\.io\/siderolabs\/installer at https:\/\/ghcr\.io: connect ECONNREFUSED/,
      );
    });

    it('imageExists errors still read "checking image"', async function () {
      const err = await rejection(client(scripted(status(503)).fetch).imageExists(ctx(), `${REPO}:v1.13.2`));
      assert.match(err.message, /^checking image ghcr\.io\/siderolabs\/installer:v1\.13\.2 at https:\/\/ghcr\.io: /);
    });

    for (const [what, repository, why] of [
      ['a tag', `${REPO}:v1.13.2`, /without the tag "v1\.13\.2"/],
      ['a digest', `${REPO}@sha256:${'a'.repeat(64)}`, /without a digest/],
      ['no registry host', 'siderolabs/installer', /no registry host/],
    ] as const) {
      it(`a repository with ${what} → Stalled InvalidImageReference without a request`, async function () {
        const s = scripted();
        const err = await rejection(client(s.fetch).listTags(ctx(), repository));
        assert.deepEqual([err.kind, err.reason], ['Stalled', 'InvalidImageReference']);
        assert.match(err.message, why);
        assert.doesNotMatch(err.message, /sha256:0{64}/, 'the placeholder digest stays internal');
        assert.equal(s.calls.length, 0);
      });
    }

    it('an already aborted context → Canceled without a request', async function () {
      const ac = new AbortController();
      ac.abort();
      const s = scripted();
      const err = await rejection(client(s.fetch).listTags(rootContext(clock, ac.signal, 60_000), REPO));
      assert.deepEqual([err.kind, err.reason], ['Transient', 'Canceled']);
      assert.equal(s.calls.length, 0);
    });
  });

  describe('mirrors', function () {
    it('lists at the mirror for a mapped registry host and names it in errors', async function () {
      const s = scripted(page(['v1.13.2']), status(404));
      const c = client(s.fetch, { mirrors: { 'ghcr.io': 'http://127.0.0.1:5000/' } });
      const list = await c.listTags(ctx(), REPO);
      assert.equal(s.calls[0]?.url, 'http://127.0.0.1:5000/v2/siderolabs/installer/tags/list?n=1000');
      assert.equal(list.checkedAt, 'http://127.0.0.1:5000');
      const err = await rejection(c.listTags(ctx(), REPO));
      assert.equal(err.reason, 'RepositoryNotFound');
      assert.match(err.message, /at mirror http:\/\/127\.0\.0\.1:5000 \(for ghcr\.io\)/);
    });

    it('follows next pages on the mirror, and refuses one back on the mirrored registry', async function () {
      const s = scripted(
        page(['a'], '/v2/siderolabs/installer/tags/list?n=1000&last=a'),
        page(['b'], 'https://ghcr.io/v2/siderolabs/installer/tags/list?n=1000&last=b'),
      );
      const err = await rejection(
        client(s.fetch, { mirrors: { 'ghcr.io': 'http://127.0.0.1:5000' } }).listTags(ctx(), REPO),
      );
      assert.equal(s.calls[1]?.url, 'http://127.0.0.1:5000/v2/siderolabs/installer/tags/list?n=1000&last=a');
      assert.deepEqual([err.kind, err.reason], ['Stalled', 'RegistryBadResponse']);
      assert.match(err.message, /points to https:\/\/ghcr\.io, not http:\/\/127\.0\.0\.1:5000/);
      assert.equal(s.calls.length, 2);
    });
  });
});
