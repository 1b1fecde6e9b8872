// Forge API failures → outcome kinds, by status and rate-limit headers.
import assert from 'node:assert/strict';
import { forgeError } from '../../../controller/forge/errors.js';

const now = 1_700_000_000_000;
const c = { tokenSource: '/etc/kangal-patch/forge-token', now, aborted: false };
const http = (status: number, headers: Record<string, string> = {}) => ({ status, response: { headers } });

describe('forge error mapping', function () {
  const cases: [string, unknown, string, string, number | undefined][] = [
    ['401', http(401), 'Stalled', 'Unauthorized', undefined],
    ['403 without rate-limit headers', http(403), 'Stalled', 'Forbidden', undefined],
    [
      '403 primary rate limit',
      http(403, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(now / 1000 + 120) }),
      'Waiting',
      'RateLimited',
      121_000,
    ],
    ['403 secondary limit with Retry-After', http(403, { 'retry-after': '30' }), 'Waiting', 'RateLimited', 30_000],
    ['429 without headers', http(429), 'Waiting', 'RateLimited', 60_000],
    ['404', http(404), 'Stalled', 'NotFound', undefined],
    ['422', http(422), 'Stalled', 'Invalid', undefined],
    ['502', http(502), 'Transient', 'ForgeError', undefined],
    ['network', new Error('ECONNREFUSED'), 'Transient', 'Unreachable', undefined],
  ];
  for (const [name, err, kind, reason, wait] of cases) {
    it(`${name} → ${kind} ${reason}`, function () {
      const e = forgeError(err, 'open a pull request', c);
      assert.deepEqual([e.kind, e.reason, e.retryAfterMs], [kind, reason, wait]);
      assert.match(e.message, /^open a pull request: /);
    });
  }
  it('credential errors name the token file, never a token', function () {
    assert.match(forgeError(http(401), 'x', c).message, /\/etc\/kangal-patch\/forge-token/);
    assert.match(forgeError(http(403), 'x', c).message, /pull_requests and statuses write/);
  });
});
