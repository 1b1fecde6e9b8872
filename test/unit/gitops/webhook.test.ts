// The push webhook: HMAC-SHA256 over the raw body, 401 on mismatch, 202 on accept, only pushes to
// the configured branch trigger a poll, a delivery seen lately is answered once only, and a secret
// under 16 bytes is refused. Served on loopback from a real HTTP server.
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  RecentDeliveries,
  readWebhookSecret,
  serveWebhook,
  signatureMatches,
} from '../../../controller/gitops/webhook.js';

/** Made-up secrets, different on every run. */
const SECRET = randomBytes(16).toString('hex');
const ROTATED = randomBytes(16).toString('hex');

describe('GitOps push webhook', function () {
  const dir = mkdtempSync(join(tmpdir(), 'kangal-webhook-'));
  const secretFile = join(dir, 'secret');
  let server: Server;
  let url = '';
  let pushes = 0;
  let now = 1_700_000_000_000;
  const sign = (body: string, secret = SECRET): string =>
    `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  const post = (body: string, headers: Record<string, string>): Promise<Response> =>
    fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

  before(async function () {
    writeFileSync(secretFile, `${SECRET}\n`);
    const h = await serveWebhook({
      bind: { host: '127.0.0.1', port: 0 },
      secretFile,
      branch: 'main',
      onPush: () => pushes++,
      log: () => undefined,
      now: () => now,
    });
    server = h.server;
    url = `http://127.0.0.1:${h.port}/hook`;
  });
  after(function () {
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('compares signatures of the raw body', function () {
    const body = Buffer.from('{"ref":"refs/heads/main"}');
    assert.equal(signatureMatches('k', body, sign(body.toString(), 'k')), true);
    assert.equal(signatureMatches('k', body, sign(body.toString(), 'other')), false);
    assert.equal(signatureMatches('k', body, 'sha256=short'), false);
    assert.equal(signatureMatches('k', body, undefined), false);
  });

  it('triggers a poll for a signed push to the branch (202) and only then', async function () {
    const main = JSON.stringify({ ref: 'refs/heads/main', after: 'abc' });
    const other = JSON.stringify({ ref: 'refs/heads/feature' });
    const before = pushes;
    assert.equal((await post(main, { 'x-github-event': 'push', 'x-hub-signature-256': sign(main) })).status, 202);
    assert.equal(pushes, before + 1);
    assert.equal((await post(other, { 'x-github-event': 'push', 'x-hub-signature-256': sign(other) })).status, 202);
    assert.equal(
      (await post(main, { 'x-github-event': 'push', 'x-hub-signature-256': sign(main, 'wrong') })).status,
      401,
    );
    assert.equal((await post(main, { 'x-github-event': 'push' })).status, 401);
    const issue = JSON.stringify({ action: 'opened' });
    assert.equal((await post(issue, { 'x-github-event': 'issues', 'x-hub-signature-256': sign(issue) })).status, 202);
    assert.equal(pushes, before + 1, 'only the signed push to main triggered');
  });

  it('answers a delivery seen within the window once: the same X-GitHub-Delivery, or the same signed body under another ID', async function () {
    const body = JSON.stringify({ ref: 'refs/heads/main', after: 'def' });
    const headers = {
      'x-github-event': 'push',
      'x-hub-signature-256': sign(body),
      'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958',
    };
    const before = pushes;
    const first = await post(body, headers);
    assert.deepEqual([first.status, (await first.text()).trim()], [202, 'poll triggered']);
    const again = await post(body, headers);
    assert.deepEqual([again.status, (await again.text()).trim()], [200, 'duplicate delivery, ignored']);
    const replayed = await post(body, { ...headers, 'x-github-delivery': 'made-up' });
    assert.deepEqual([replayed.status, (await replayed.text()).trim()], [200, 'duplicate delivery, ignored']);
    const other = JSON.stringify({ ref: 'refs/heads/main', after: 'ghi' });
    const sameId = await post(other, { ...headers, 'x-hub-signature-256': sign(other) });
    assert.deepEqual([sameId.status, (await sameId.text()).trim()], [200, 'duplicate delivery, ignored']);
    assert.equal(pushes, before + 1, 'the duplicates triggered no poll');
    now += 10 * 60_000;
    assert.equal((await post(body, headers)).status, 202, 'after 10 minutes the delivery is new again');
    assert.equal(pushes, before + 2);
  });

  it('an unsigned or wrongly signed delivery is not remembered (it cannot shadow a real one)', async function () {
    const body = JSON.stringify({ ref: 'refs/heads/main', after: 'jkl' });
    const id = { 'x-github-event': 'push', 'x-github-delivery': 'd-unsigned' };
    assert.equal((await post(body, { ...id, 'x-hub-signature-256': sign(body, 'wrong') })).status, 401);
    assert.equal((await post(body, { ...id, 'x-hub-signature-256': sign(body) })).status, 202);
  });

  it('re-reads the secret file (rotation), and refuses every delivery while it holds under 16 bytes', async function () {
    writeFileSync(secretFile, `${ROTATED}\n`);
    const body = JSON.stringify({ ref: 'refs/heads/main' });
    assert.equal((await post(body, { 'x-github-event': 'push', 'x-hub-signature-256': sign(body) })).status, 401);
    assert.equal(
      (await post(body, { 'x-github-event': 'push', 'x-hub-signature-256': sign(body, ROTATED) })).status,
      202,
    );
    writeFileSync(secretFile, 'short\n');
    const next = JSON.stringify({ ref: 'refs/heads/main', after: 'mno' });
    assert.equal(
      (await post(next, { 'x-github-event': 'push', 'x-hub-signature-256': sign(next, 'short') })).status,
      503,
    );
    writeFileSync(secretFile, `${SECRET}\n`);
  });

  it('reads a secret of at least 16 bytes, and says why another cannot be used without showing it', async function () {
    const file = join(dir, 'checked');
    for (const [text, problem] of [
      [
        '',
        /webhook secret in .*checked is empty; it must be at least 16 bytes \(generate one with `openssl rand -hex 32`/,
      ],
      ['  \n', /is empty/],
      ['fifteen-bytes!!\n', /is 15 bytes; it must be at least 16 bytes/],
    ] as const) {
      writeFileSync(file, text);
      const got = await readWebhookSecret(file);
      assert.ok(got instanceof Error, `accepted ${JSON.stringify(text)}`);
      assert.match(got.message, problem);
      if (text.trim() !== '') assert.ok(!got.message.includes(text.trim()), 'the value is not in the message');
    }
    writeFileSync(file, 'sixteen-bytes!!!\n');
    assert.equal(await readWebhookSecret(file), 'sixteen-bytes!!!');
    const missing = await readWebhookSecret(join(dir, 'nope'));
    assert.ok(missing instanceof Error);
    assert.match(missing.message, /cannot read the webhook secret file .*nope: ENOENT/);
  });
});

describe('webhook: recent deliveries', function () {
  it('remembers the last maxEntries keys, none longer than maxAgeMs', function () {
    const r = new RecentDeliveries({ maxEntries: 3, maxAgeMs: 1000 });
    for (const k of ['a', 'b', 'c']) assert.equal(r.firstTime([k], 0), true);
    assert.equal(r.firstTime(['a'], 10), false);
    assert.equal(r.firstTime(['d'], 20), true, 'a fourth key');
    assert.equal(r.firstTime(['a'], 30), true, 'the oldest was forgotten');
    assert.equal(r.size(), 3);
    assert.equal(r.firstTime(['d'], 1019), false);
    assert.equal(r.firstTime(['d'], 1020), true, 'a key older than maxAgeMs is new again');
  });

  it('one known key of several makes a duplicate, and records nothing', function () {
    const r = new RecentDeliveries();
    assert.equal(r.firstTime(['id:1', 'body:x'], 0), true);
    assert.equal(r.firstTime(['id:2', 'body:x'], 1), false);
    assert.equal(r.firstTime(['id:2', 'body:y'], 2), true, 'id:2 was not recorded by the duplicate');
  });

  it('holds at most 1,000 deliveries by default', function () {
    const r = new RecentDeliveries();
    for (let i = 0; i < 5000; i++) r.firstTime([`id:${i}`], i);
    assert.equal(r.size(), 1000);
  });
});
