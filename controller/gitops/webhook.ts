// The optional push webhook (GitHub payloads): HMAC-SHA256 of the raw body with the secret from
// --webhook-secret-file (re-read per request, so rotation needs no restart; at least 16 bytes),
// compared in constant time. Signed deliveries seen lately (by X-GitHub-Delivery, and by body) are
// answered once only. It only triggers a poll; the payload's content is never trusted beyond its ref.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signatureMatches } from '../runtime/hmac.js';
import type { BindAddress } from '../telemetry/http.js';

export { signatureMatches };

const MAX_BODY = 1024 * 1024;

/** A shorter HMAC key can be guessed; GitHub's own advice is a long random string. */
const MIN_WEBHOOK_SECRET_BYTES = 16;

/** The secret in `file`, or why it cannot be used (the value never appears in a message). */
export async function readWebhookSecret(file: string): Promise<string | Error> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return new Error(`cannot read the webhook secret file ${file}: ${typeof code === 'string' ? code : 'unreadable'}`);
  }
  const secret = text.trim();
  const bytes = Buffer.byteLength(secret, 'utf8');
  if (bytes < MIN_WEBHOOK_SECRET_BYTES) {
    return new Error(
      `the webhook secret in ${file} is ${bytes === 0 ? 'empty' : `${bytes} bytes`}; it must be at least ${MIN_WEBHOOK_SECRET_BYTES} bytes (generate one with \`openssl rand -hex 32\` and set the same in the forge's webhook)`,
    );
  }
  return secret;
}

export interface DeliveryWindow {
  /** How many deliveries are remembered. */
  maxEntries: number;
  /** How long one is remembered. */
  maxAgeMs: number;
}

const DEFAULT_DELIVERY_WINDOW: DeliveryWindow = { maxEntries: 1000, maxAgeMs: 10 * 60_000 };

/**
 * The signed deliveries seen within the window: the last `maxEntries`, none older than `maxAgeMs`.
 * Time is an argument. Keys are the X-GitHub-Delivery ID and the body's digest, so a signed body
 * replayed under a made-up ID (the signature covers the body only) is a duplicate too.
 */
export class RecentDeliveries {
  /** Key → when it was seen, oldest first (a Map keeps insertion order). */
  private readonly seen = new Map<string, number>();

  constructor(private readonly window: DeliveryWindow = DEFAULT_DELIVERY_WINDOW) {}

  /** Whether any of `keys` was seen within the window; records them all as seen `now` otherwise. */
  firstTime(keys: readonly string[], now: number): boolean {
    this.forgetOld(now);
    if (keys.some((k) => this.seen.has(k))) return false;
    for (const k of keys) {
      this.seen.set(k, now);
      while (this.seen.size > this.window.maxEntries) {
        const oldest = this.seen.keys().next();
        if (oldest.done) break;
        this.seen.delete(oldest.value);
      }
    }
    return true;
  }

  size(): number {
    return this.seen.size;
  }

  private forgetOld(now: number): void {
    for (const [k, at] of this.seen) {
      if (now - at < this.window.maxAgeMs) break;
      this.seen.delete(k);
    }
  }
}

export interface WebhookOptions {
  bind: BindAddress;
  secretFile: string;
  branch: string;
  onPush: () => void;
  log: (msg: string, fields?: Record<string, unknown>) => void;
  /** Milliseconds since the epoch (tests); the system clock by default. */
  now?: () => number;
  deliveryWindow?: DeliveryWindow;
}

export async function serveWebhook(opts: WebhookOptions): Promise<{ server: Server; port: number }> {
  const recent = new RecentDeliveries(opts.deliveryWindow);
  const server = createServer((req, res) => {
    handle(opts, recent, req, res).catch(() => reply(res, 500, 'error'));
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

/** What makes a delivery a duplicate: its body's digest, and its X-GitHub-Delivery ID when it has one. */
function deliveryKeys(req: IncomingMessage, body: Buffer): string[] {
  const delivery = req.headers['x-github-delivery'];
  const keys = [`body:${createHash('sha256').update(body).digest('hex')}`];
  if (typeof delivery === 'string' && delivery !== '') keys.push(`id:${delivery}`);
  return keys;
}

async function handle(
  opts: WebhookOptions,
  recent: RecentDeliveries,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (req.method !== 'POST') return reply(res, 405, 'POST only');
  const body = await readBody(req);
  if (!body) return reply(res, 413, 'payload too large');
  const secret = await readWebhookSecret(opts.secretFile);
  if (secret instanceof Error) {
    // Rotated to something unusable since the start: no delivery is accepted until it is fixed.
    opts.log(`webhook: ${secret.message}; deliveries are refused`);
    return reply(res, 503, 'webhook secret unusable');
  }
  const signature = req.headers['x-hub-signature-256'];
  if (!signatureMatches(secret, body, typeof signature === 'string' ? signature : undefined)) {
    opts.log('webhook: signature mismatch (X-Hub-Signature-256)', { remote: req.socket.remoteAddress });
    return reply(res, 401, 'signature mismatch');
  }
  if (!recent.firstTime(deliveryKeys(req, body), (opts.now ?? Date.now)()))
    return reply(res, 200, 'duplicate delivery, ignored');
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
