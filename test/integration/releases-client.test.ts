// The releases client (controller/forge/releases.ts) against the lab forge: the feed, a 304 for an
// unchanged feed, rate limits, auth failures and an unreachable API. Every request and response is
// checked against GitHub's OpenAPI description by the forge.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { createReleasesClient, checkReleasesBaseUrl } from '../../controller/forge/releases.js';
import { OutcomeError } from '../../controller/runtime/outcome.js';
import { rootContext } from '../../controller/runtime/context.js';
import { systemClock } from '../../controller/runtime/clock.js';
import type { ForgeFault } from '../lab/forge/faults.js';
import { startForge, type Forge } from '../lab/forge/index.js';

/** A made-up token the forge does not know, different on every run. */
const WRONG_TOKEN = randomBytes(18).toString('hex');

const ctx = () => rootContext(systemClock, new AbortController().signal, 30_000);
const rejection = async (p: Promise<unknown>): Promise<OutcomeError> => {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof OutcomeError, String(err));
    return err;
  }
  assert.fail('expected a rejection');
};

interface SentRequest {
  url: string;
  headers: Record<string, string>;
}

/** The feed's request as the client sent it: GitHub's headers, the token in Authorization only. */
function assertFeedRequest(req: SentRequest | undefined, forge: Forge): void {
  assert.equal(req?.url, `${forge.apiUrl}/repos/siderolabs/talos/releases?per_page=100`);
  assert.equal(req?.headers.accept, 'application/vnd.github+json');
  assert.equal(req?.headers['x-github-api-version'], '2022-11-28');
  assert.equal(req?.headers.authorization, `Bearer ${forge.token}`);
  assert.ok(!req?.url.includes(forge.token));
}

describe('forge/releases: the Talos releases feed from the lab forge', function () {
  this.timeout(60_000);
  let forge: Forge;
  const sent: SentRequest[] = [];
  const recordingFetch: typeof fetch = (input, init) => {
    sent.push({
      url: input instanceof Request ? input.url : input.toString(),
      headers: { ...(init?.headers as Record<string, string>) },
    });
    return fetch(input, init);
  };

  before(async function () {
    forge = await startForge();
    await forge.createRepo('siderolabs', 'talos');
    forge.addRelease('siderolabs', 'talos', 'v1.13.2', { publishedAt: '2026-11-01T00:00:00Z' });
    forge.addRelease('siderolabs', 'talos', 'v1.14.0-beta.0', {
      prerelease: true,
      publishedAt: '2026-11-10T00:00:00Z',
    });
    forge.addRelease('siderolabs', 'talos', 'v1.13.3', { publishedAt: '2026-11-20T00:00:00Z' });
  });
  after(async function () {
    await forge?.stop();
  });
  afterEach(function () {
    assert.deepEqual(forge.violations, []);
  });

  it('lists the releases with GitHub headers, the token only in Authorization; an unchanged feed is a 304 that keeps the list', async function () {
    const client = createReleasesClient({ baseUrl: forge.apiUrl, token: forge.token, fetch: recordingFetch });
    const first = await client.list(ctx());
    assert.equal(first.notModified, false);
    assert.deepEqual(
      first.releases.map((r) => [r.tagName, r.prerelease]),
      [
        ['v1.13.3', false],
        ['v1.14.0-beta.0', true],
        ['v1.13.2', false],
      ],
    );
    assert.equal(first.releases[0]?.publishedAt, Date.parse('2026-11-20T00:00:00Z'));
    assert.match(first.releases[0]?.htmlUrl ?? '', /\/siderolabs\/talos\/releases\/tag\/v1\.13\.3$/);
    assertFeedRequest(sent.at(-1), forge);

    const remaining = first.rateLimit?.remaining ?? 0;
    const second = await client.list(ctx());
    assert.equal(second.notModified, true);
    assert.deepEqual(second.releases, first.releases);
    assert.equal(forge.requests.at(-1)?.status, 304);
    assert.ok(sent.at(-1)?.headers['if-none-match']?.startsWith('W/"'));
    assert.equal(second.rateLimit?.remaining, remaining, 'a 304 costs no rate limit');

    forge.addRelease('siderolabs', 'talos', 'v1.14.0', { publishedAt: '2026-11-25T00:00:00Z' });
    const third = await client.list(ctx());
    assert.equal(third.notModified, false);
    assert.equal(third.releases[0]?.tagName, 'v1.14.0');
  });

  it('an exhausted rate limit is Waiting until x-ratelimit-reset, and says when', async function () {
    const client = createReleasesClient({ baseUrl: forge.apiUrl, token: forge.token });
    const reset = Math.floor(Date.now() / 1000) + 600;
    forge.setRateLimit({ remaining: 0, reset });
    try {
      const err = await rejection(client.list(ctx()));
      assert.equal(err.kind, 'Waiting');
      assert.equal(err.reason, 'RateLimited');
      assert.equal(err.code, 403);
      assert.ok((err.retryAfterMs ?? 0) > 500_000 && (err.retryAfterMs ?? 0) <= 600_000, String(err.retryAfterMs));
      assert.match(
        err.message,
        new RegExp(`rate limit exhausted until ${new Date(reset * 1000).toISOString().replace(/\./g, '\\.')}`),
      );
    } finally {
      forge.setRateLimit({ remaining: 5000 });
    }
    assert.equal((await client.list(ctx())).notModified, false, 'served again after the limit is back');
  });

  it('a rejected token is Stalled without the token in the message; anonymous gets a hint', async function () {
    const bad = await rejection(createReleasesClient({ baseUrl: forge.apiUrl, token: WRONG_TOKEN }).list(ctx()));
    assert.equal(bad.kind, 'Stalled');
    assert.equal(bad.reason, 'Unauthorized');
    assert.ok(!bad.message.includes(WRONG_TOKEN));
    assert.match(bad.message, /the token is invalid or expired/);
    const anonymous = await rejection(createReleasesClient({ baseUrl: forge.apiUrl }).list(ctx()));
    assert.equal(anonymous.reason, 'Unauthorized');
    assert.match(anonymous.message, /the API needs a token/);
    const missing = await rejection(
      createReleasesClient({ baseUrl: forge.apiUrl, token: forge.token, repository: 'siderolabs/nothing' }).list(ctx()),
    );
    assert.equal(missing.kind, 'Stalled');
    assert.equal(missing.reason, 'NotFound');
  });

  it('malformed answers (an HTML error page, HTML or wrongly typed JSON with 200, a huge body) are Transient with a reason, never a crash; the feed is read again once the API answers properly', async function () {
    const client = createReleasesClient({ baseUrl: forge.apiUrl, token: forge.token });
    const feed = /\/releases$/;
    const html =
      '<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>';
    const cases: { fault: Omit<ForgeFault, 'path'>; reason: string; message: RegExp }[] = [
      {
        fault: { status: 502, contentType: 'text/html', body: html },
        reason: 'Unavailable',
        message: /releases: HTTP 502$/,
      },
      {
        fault: { status: 200, contentType: 'text/html', body: html },
        reason: 'InvalidResponse',
        message: /releases: the body is not JSON$/,
      },
      {
        fault: { status: 200, contentType: 'application/json', body: '{"message":"not a list"}' },
        reason: 'InvalidResponse',
        message: /releases: not a list of releases: /,
      },
      {
        fault: {
          status: 200,
          contentType: 'application/json',
          body: JSON.stringify([{ tag_name: 1132, draft: 'no', prerelease: false, published_at: null, html_url: 'x' }]),
        },
        reason: 'InvalidResponse',
        message: /releases: not a list of releases: /,
      },
      {
        fault: { status: 200, contentType: 'application/json', body: '[{"tag_name":"v1.13.4"' },
        reason: 'InvalidResponse',
        message: /releases: the body is not JSON$/,
      },
      {
        fault: { status: 200, contentType: 'application/json', body: { bytes: 64 * 1024 * 1024 } },
        reason: 'ResponseTooLarge',
        message:
          /^GET http:\/\/127\.0\.0\.1:\d+\/repos\/siderolabs\/talos\/releases: the answer is larger than 8 MiB; not read further$/,
      },
    ];
    try {
      for (const c of cases) {
        forge.injectFault({ path: feed, ...c.fault });
        const err = await rejection(client.list(ctx()));
        assert.deepEqual([err.kind, err.reason], ['Transient', c.reason], err.message);
        assert.match(err.message, c.message);
        assert.ok(!err.message.includes('<html'), 'an HTML page is not pasted into the message');
      }
    } finally {
      forge.injectFault(undefined);
    }
    assert.equal((await client.list(ctx())).releases.length > 0, true, 'read again once the API answers properly');
  });

  it('an unreachable API is Transient', async function () {
    const port = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const err = await rejection(createReleasesClient({ baseUrl: `http://127.0.0.1:${port}` }).list(ctx()));
    assert.equal(err.kind, 'Transient');
    assert.equal(err.reason, 'NetworkError');
    assert.match(err.message, /ECONNREFUSED/);
  });

  it('base URLs: https, http only to loopback, no credentials', function () {
    assert.equal(checkReleasesBaseUrl('https://ghe.example.com/api/v3/'), 'https://ghe.example.com/api/v3');
    assert.equal(checkReleasesBaseUrl('http://127.0.0.1:8080'), 'http://127.0.0.1:8080');
    assert.match(String(checkReleasesBaseUrl('http://api.github.com')), /must be https/);
    assert.match(
      String(checkReleasesBaseUrl('https://user:pw@api.github.com')),
      /credentials do not belong in the URL/,
    );
  });
});
