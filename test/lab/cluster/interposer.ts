// A TLS pass-through in front of the lab's kube-apiserver for the process under test: it records
// every exchange (method, path, status) and lets a test act at the exact moment a request
// arrives, before the apiserver sees it — e.g. a kubelet status post racing a cordon, so a
// guarded write conflicts on purpose rather than by chance.
//
// It serves with the apiserver's own certificate (same CA, same addresses), so clients verify TLS
// as usual, and forwards with the credentials of the kubeconfig it replaces: the admin's client
// certificate, or the request's own bearer token when it carries one.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, request as httpsRequest, Agent, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { kubeconfigYaml } from './http.js';
import type { LabCluster } from './index.js';

export interface InterposedRequest {
  method: string;
  /** Path and query, e.g. `/api/v1/nodes/worker-1`. */
  path: string;
  /** The JSON body, parsed (undefined for none or non-JSON). */
  body: unknown;
}

export interface Exchange {
  method: string;
  path: string;
  status: number;
  /** Epoch ms when the request arrived. */
  at: number;
  /** A watch: events streamed to the client so far (one JSON line each, bookmarks included). */
  watchEvents?: number;
  /** A write (POST, PUT, PATCH) answered 2xx: metadata.resourceVersion of the object it returned. */
  resourceVersion?: string;
  /**
   * For a write: the highest resourceVersion any earlier write response carried when this request
   * arrived. etcd revisions only grow, so a write that changed something answers above it; one that
   * changed nothing answers with the object's old version, at or below it (see noOpWrites).
   */
  seenBefore?: number;
  /**
   * A write whose answer is an object being deleted with no finalizer left: the update that removed
   * the last finalizer deleted the object, and the apiserver answers with the object as it was
   * before the deletion (its old resourceVersion), though the write changed it.
   */
  deletedByWrite?: boolean;
}

/**
 * An answer the interposer gives itself instead of forwarding (a 429, 500 or 410 storm): a
 * Kubernetes Status with this code. With `watchLines`, a watch's answer instead: 200, then exactly
 * these lines (garbage, events of the wrong shape, an ERROR event), then the stream ends.
 */
export interface CannedAnswer {
  status: number;
  /** Retry-After seconds, as the apiserver sends with a 429. */
  retryAfterSeconds?: number;
  /** The Status's reason and message; by default from the code (TooManyRequests, Expired, InternalError). */
  reason?: string;
  message?: string;
  watchLines?: string[];
  /** With `watchLines`: keep the stream open after them, sending nothing more (a watch gone silent). */
  keepOpen?: boolean;
}

/** Forward the request, but pass each line of its watch stream through `rewriteWatchLine` (a proxy that corrupts events). */
export interface WatchRewrite {
  rewriteWatchLine: (line: string) => string;
}

const REASONS: Record<number, string> = { 410: 'Expired', 429: 'TooManyRequests' };

/** The methods whose answers carry the resourceVersion the write produced. */
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** Runs before the request is forwarded; the request waits for it. Returning an answer sends that instead. */
export type BeforeForward = (
  req: InterposedRequest,
) => Promise<CannedAnswer | WatchRewrite | void> | CannedAnswer | WatchRewrite | void;

export interface ApiInterposer {
  /** `https://127.0.0.1:PORT` */
  readonly server: string;
  /** A kubeconfig (admin credentials) whose server is this interposer. */
  readonly kubeconfigPath: string;
  /** Every exchange so far, in arrival order (watches appear once their response headers came). */
  readonly exchanges: readonly Exchange[];
  /** Replaces the hook; undefined removes it. */
  setBeforeForward(hook: BeforeForward | undefined): void;
  /** TLS connections clients opened to the interposer so far (how well they reuse their connections). */
  tlsConnections(): number;
  /** Cuts the network: every open connection (watches too) is reset, new ones are reset at once, until `restore()`. */
  cut(): void;
  /**
   * Half-open watches: every watch open now whose path and query match `match` (all by default)
   * stops forwarding — its connection stays open, no byte reaches the client, no FIN, not even a
   * bookmark — as after a NAT or load balancer dropped the connection's state. New requests, new
   * watches too, go through as before. Returns how many watches went silent.
   */
  silenceWatches(match?: (path: string) => boolean): number;
  restore(): void;
  close(): Promise<void>;
}

export async function startApiInterposer(cluster: LabCluster): Promise<ApiInterposer> {
  const pki = join(cluster.dir, 'pki');
  const read = (name: string): string => readFileSync(join(pki, name), 'utf8');
  const upstream = new URL(cluster.server);
  const withClientCert = new Agent({
    keepAlive: true,
    ca: cluster.caPem,
    cert: read('admin.crt'),
    key: read('admin.key'),
  });
  const withToken = new Agent({ keepAlive: true, ca: cluster.caPem });
  const exchanges: Exchange[] = [];
  let hook: BeforeForward | undefined;
  let highestWritten = 0;
  let isCut = false;
  const sockets = new Set<Socket>();
  /** Open forwarded watches, by path, and how to make each silent. */
  const watches = new Map<{ path: string }, () => void>();

  const server: Server = createServer({ cert: read('apiserver.crt'), key: read('apiserver.key') }, (req, res) => {
    const at = Date.now();
    void readBody(req).then(async (raw) => {
      const method = req.method ?? 'GET';
      const path = req.url ?? '/';
      let canned: CannedAnswer | undefined;
      let rewrite: WatchRewrite | undefined;
      try {
        const answer = await hook?.({ method, path, body: parseJson(raw) });
        if (answer && 'rewriteWatchLine' in answer) rewrite = answer;
        else canned = answer ?? undefined;
      } catch (err) {
        // A failing hook is the test's bug: answer so the client sees it instead of hanging.
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`interposer hook failed: ${String(err)}`);
        return;
      }
      if (canned) {
        exchanges.push({
          method,
          path,
          status: canned.status,
          at,
          ...(canned.watchLines ? { watchEvents: canned.watchLines.length } : {}),
        });
        sendCanned(res, canned);
        return;
      }
      const agent = req.headers.authorization ? withToken : withClientCert;
      const isWrite = WRITE_METHODS.has(method);
      const seenBefore = highestWritten;
      const up = httpsRequest(
        { host: upstream.hostname, port: upstream.port, method, path, headers: req.headers, agent },
        (r) => {
          const exchange: Exchange = { method, path, status: r.statusCode ?? 0, at };
          exchanges.push(exchange);
          res.writeHead(r.statusCode ?? 502, r.headers);
          let silenced = false;
          if (/[?&]watch=(true|1)\b/.test(path)) {
            exchange.watchEvents = 0;
            r.on('data', (chunk: Buffer) => {
              if (silenced) return;
              for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1))
                exchange.watchEvents = (exchange.watchEvents ?? 0) + 1;
            });
            const key = { path };
            watches.set(key, () => {
              // What the apiserver sends from now on is dropped here; the client's response never ends.
              silenced = true;
              r.unpipe(res);
            });
            res.on('close', () => watches.delete(key));
          } else if (isWrite && exchange.status < 300) {
            exchange.seenBefore = seenBefore;
            const chunks: Buffer[] = [];
            r.on('data', (chunk: Buffer) => chunks.push(chunk));
            r.on('end', () => {
              const metadata = (
                parseJson(Buffer.concat(chunks)) as
                  | { metadata?: { resourceVersion?: string; deletionTimestamp?: string; finalizers?: string[] } }
                  | undefined
              )?.metadata;
              const rv = metadata?.resourceVersion;
              if (rv === undefined) return;
              exchange.resourceVersion = rv;
              if (metadata?.deletionTimestamp !== undefined && (metadata.finalizers ?? []).length === 0)
                exchange.deletedByWrite = true;
              if (/^\d+$/.test(rv)) highestWritten = Math.max(highestWritten, Number(rv));
            });
          }
          // An upstream answer cut short (the apiserver killed mid-watch) ends the client's too, as the
          // kernel closes a killed apiserver's connections: pipe() alone would leave the client's watch
          // open and silent (seed 3045: a node's Ready missed until a job's reboot deadline).
          r.on('close', () => {
            if (!r.complete && !silenced) res.destroy();
          });
          if (rewrite) pipeRewritten(r, res, rewrite.rewriteWatchLine, () => silenced);
          else r.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      up.end(raw);
    });
  });
  // Raw TCP sockets, so a cut resets TLS connections (and the watches on them) as a dropped network would.
  server.on('connection', (socket: Socket) => {
    if (isCut) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  let tlsConnections = 0;
  server.on('secureConnection', () => tlsConnections++);
  // As kube-apiserver keeps an idle connection (its http.Server IdleTimeout, 90 s), not Node's 5 s:
  // the controller's connection reuse is measured against the server it stands in for.
  server.keepAliveTimeout = 90_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const kubeconfigPath = join(cluster.dir, `interposed-${(server.address() as AddressInfo).port}.kubeconfig`);
  writeFileSync(
    kubeconfigPath,
    kubeconfigYaml(url, cluster.caPem, { cert: read('admin.crt'), key: read('admin.key') }),
    {
      mode: 0o600,
    },
  );
  return {
    server: url,
    kubeconfigPath,
    exchanges,
    tlsConnections: () => tlsConnections,
    setBeforeForward: (h) => {
      hook = h;
    },
    cut: () => {
      isCut = true;
      for (const s of sockets) s.resetAndDestroy();
      sockets.clear();
    },
    restore: () => {
      isCut = false;
    },
    silenceWatches: (match = () => true) => {
      let n = 0;
      for (const [watch, silence] of watches) {
        if (!match(watch.path)) continue;
        silence();
        watches.delete(watch);
        n++;
      }
      return n;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
        withClientCert.destroy();
        withToken.destroy();
      }),
  };
}

/** Sends an answer the interposer gives itself: a Status, or a watch's lines. */
function sendCanned(res: ServerResponse, canned: CannedAnswer): void {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (canned.retryAfterSeconds !== undefined) headers['retry-after'] = String(canned.retryAfterSeconds);
  if (canned.watchLines) {
    const body = canned.watchLines.map((l) => `${l}\n`).join('');
    res.writeHead(canned.status, headers);
    if (canned.keepOpen) res.write(body);
    else res.end(body);
    return;
  }
  const reason = canned.reason ?? REASONS[canned.status] ?? 'InternalError';
  const message = canned.message ?? `injected by the lab interposer: ${reason}`;
  res
    .writeHead(canned.status, headers)
    .end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: canned.status, reason, message }));
}

/** Copies a watch stream line by line through `rewrite`, until `silenced()`. */
function pipeRewritten(
  from: IncomingMessage,
  to: ServerResponse,
  rewrite: (line: string) => string,
  silenced: () => boolean,
): void {
  let held = Buffer.alloc(0);
  from.on('data', (chunk: Buffer) => {
    if (silenced()) return;
    held = Buffer.concat([held, chunk]);
    for (let nl = held.indexOf(10); nl !== -1; nl = held.indexOf(10)) {
      to.write(`${rewrite(held.subarray(0, nl).toString('utf8'))}\n`);
      held = held.subarray(nl + 1);
    }
  });
  from.on('end', () => {
    if (!silenced()) to.end(held);
  });
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}
