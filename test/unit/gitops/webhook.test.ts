// The push webhook: HMAC-SHA256 over the raw body, 401 on mismatch, 202 on accept, only pushes to
// the configured branch trigger a poll. Served on loopback from a real HTTP server.
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serveWebhook, signatureMatches } from '../../../controller/gitops/webhook.js';

/** Made-up secrets, different on every run. */
const SECRET = randomBytes(16).toString('hex');
const ROTATED = randomBytes(16).toString('hex');

describe('GitOps push webhook', function () {
  const dir = mkdtempSync(join(tmpdir(), 'kangal-webhook-'));
  const secretFile = join(dir, 'secret');
  let server: Server;
  let url = '';
  let pushes = 0;
  const sign = (body: string, secret = SECRET): string => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  const post = (body: string, headers: Record<string, string>): Promise<Response> => fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

  before(async function () {
    writeFileSync(secretFile, `${SECRET}\n`);
    const h = await serveWebhook({ bind: { host: '127.0.0.1', port: 0 }, secretFile, branch: 'main', onPush: () => pushes++, log: () => undefined });
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
    assert.equal((await post(main, { 'x-github-event': 'push', 'x-hub-signature-256': sign(main, 'wrong') })).status, 401);
    assert.equal((await post(main, { 'x-github-event': 'push' })).status, 401);
    assert.equal((await post(main, { 'x-github-event': 'issues', 'x-hub-signature-256': sign(main) })).status, 202);
    assert.equal(pushes, before + 1, 'only the signed push to main triggered');
  });

  it('re-reads the secret file (rotation)', async function () {
    writeFileSync(secretFile, `${ROTATED}\n`);
    const body = JSON.stringify({ ref: 'refs/heads/main' });
    assert.equal((await post(body, { 'x-github-event': 'push', 'x-hub-signature-256': sign(body) })).status, 401);
    assert.equal((await post(body, { 'x-github-event': 'push', 'x-hub-signature-256': sign(body, ROTATED) })).status, 202);
  });
});
