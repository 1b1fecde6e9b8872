// The optional push webhook (GitHub payloads): HMAC-SHA256 of the raw body with the secret from
// --webhook-secret-file (re-read per request, so rotation needs no restart), compared in constant
// time. It only triggers a poll; the payload's content is never trusted beyond its ref.
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signatureMatches } from '../runtime/hmac.js';
import type { BindAddress } from '../telemetry/http.js';

export { signatureMatches };

const MAX_BODY = 1024 * 1024;

export interface WebhookOptions {
  bind: BindAddress;
  secretFile: string;
  branch: string;
  onPush: () => void;
  log: (msg: string, fields?: Record<string, unknown>) => void;
}

export async function serveWebhook(opts: WebhookOptions): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    handle(opts, req, res).catch(() => reply(res, 500, 'error'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.bind.port, opts.bind.host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}

function reply(res: ServerResponse, code: number, text: string): void {
  if (res.headersSent) return;
  res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(`${text}\n`);
}

async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function handle(opts: WebhookOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'POST') return reply(res, 405, 'POST only');
  const body = await readBody(req);
  if (!body) return reply(res, 413, 'payload too large');
  const secret = (await readFile(opts.secretFile, 'utf8')).trim();
  const signature = req.headers['x-hub-signature-256'];
  if (!signatureMatches(secret, body, typeof signature === 'string' ? signature : undefined)) {
    opts.log('webhook: signature mismatch (X-Hub-Signature-256)', { remote: req.socket.remoteAddress });
    return reply(res, 401, 'signature mismatch');
  }
  const event = req.headers['x-github-event'];
  if (event === 'ping') return reply(res, 200, 'pong');
  if (event !== 'push') return reply(res, 202, 'ignored: not a push');
  let ref: unknown;
  try {
    ref = (JSON.parse(body.toString('utf8')) as { ref?: unknown }).ref;
  } catch {
    return reply(res, 400, 'body is not JSON');
  }
  if (ref !== `refs/heads/${opts.branch}`) return reply(res, 202, 'ignored: another branch');
  opts.onPush();
  return reply(res, 202, 'poll triggered');
}
