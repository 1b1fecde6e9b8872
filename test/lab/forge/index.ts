// The lab's git forge: one loopback HTTP server with smart-HTTP git (`git http-backend`), the
// subset of GitHub's REST API KangalPatch uses, and a Gitea-shaped subset under /api/v1 sharing
// the same store, all behind the same token auth.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { makeLabDir } from '../process.js';
import { checkAuth, type AuthResult } from './auth.js';
import { initBareRepo, serveGitCgi } from './git.js';
import { answeredWithFault, serveFault, type ForgeFault } from './faults.js';
import { ForgeApi, type RecordedRequest, type Violation } from './api.js';
import { GiteaApi } from './gitea-api.js';

/**
 * The v2 command of a request body: its first pkt-line is `command=<name>\n` (gitprotocol-v2).
 * Reads beside git http-backend, which gets the same bytes; gzip bodies are inflated first.
 */
function recordV2Command(req: IncomingMessage, entry: GitRequest): void {
  if (entry.method !== 'POST' || entry.gitProtocol?.includes('version=2') !== true) return;
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (c: Buffer) => {
    if (size < 64 * 1024) chunks.push(c);
    size += c.length;
  });
  req.on('end', () => {
    let body = Buffer.concat(chunks);
    if (entry.contentEncoding === 'gzip') {
      try {
        body = gunzipSync(body);
      } catch {
        return;
      }
    }
    const text = body.toString('latin1');
    const m = /^[0-9a-f]{4}command=([a-z-]+)\n/.exec(text.slice(0, 64));
    entry.command = m?.[1];
    if (entry.command === 'ls-refs')
      entry.refPrefixes = pktLines(text).flatMap((l) =>
        l.startsWith('ref-prefix ') ? [l.slice('ref-prefix '.length)] : [],
      );
  });
}

/** The payloads of a pkt-line stream (flush, delimiter and end packets skipped), each without its trailing newline, if any. */
function pktLines(text: string): string[] {
  const lines: string[] = [];
  for (let at = 0; at + 4 <= text.length;) {
    const length = Number.parseInt(text.slice(at, at + 4), 16);
    if (Number.isNaN(length)) break;
    if (length < 4) {
      at += 4;
      continue;
    }
    lines.push(text.slice(at + 4, at + length).replace(/\n$/, ''));
    at += length;
  }
  return lines;
}

export interface ForgeOptions {
  /** The token every request must carry; a random `ghs_…` token by default. */
  token?: string;
  /** Port on 127.0.0.1; a free one by default. */
  port?: number;
}

interface CreateRepoOptions {
  defaultBranch?: string;
  /** Files of a first commit on the default branch (path → content). */
  files?: Record<string, string>;
}

/** One smart-HTTP request (headers that shape the body, never Authorization). */
export interface GitRequest {
  method: string;
  path: string;
  contentEncoding: string | undefined;
  /** True when the body came without Content-Length (chunked), as git sends large packs. */
  chunked: boolean;
  /** The Git-Protocol header (`version=2` for protocol v2 requests such as ls-refs). */
  gitProtocol: string | undefined;
  /**
   * A protocol v2 POST's command (`ls-refs`: a ref listing, no pack; `fetch`), read from the first
   * pkt-line of its body once it has arrived; undefined for GETs and v0/v1 exchanges.
   */
  command?: string | undefined;
  /** An `ls-refs` request's `ref-prefix` arguments (which refs it asked for); undefined otherwise. */
  refPrefixes?: string[] | undefined;
  status: number;
  /** Epoch ms when the request arrived. */
  at: number;
}

export interface Forge {
  /** `http://127.0.0.1:PORT`: git remotes live under it, and it is the REST API base URL (also served under `/api/v3`). */
  readonly url: string;
  readonly apiUrl: string;
  /** `${url}/api/v1`: the Gitea-shaped REST API (Gitea's own base path), same token, same repositories and PRs. */
  readonly giteaApiUrl: string;
  readonly token: string;
  /** Another token accepted like `token` (e.g. one per controller: two clusters writing to one repository). */
  issueToken(): string;
  createRepo(owner: string, name: string, opts?: CreateRepoOptions): Promise<{ cloneUrl: string; bareDir: string }>;
  /** Every REST API call through either surface, in order (no headers, so no tokens). */
  readonly requests: RecordedRequest[];
  /** Every smart-HTTP git request, in order. */
  readonly gitRequests: GitRequest[];
  /** Requests an OpenAPI description rejects, and responses of the fake that do not match it (Gitea's errors start with `gitea /api/v1:`). */
  readonly violations: Violation[];
  /** The Talos release feed: add a release as GitHub would list it. */
  addRelease: ForgeApi['addRelease'];
  /** The token's primary rate limit (remaining 0: requests get GitHub's 403 until reset). */
  setRateLimit: ForgeApi['setRateLimit'];
  /** From now on, REST requests matching the fault's path get its malformed answer; undefined: serve normally again. */
  injectFault(fault: ForgeFault | undefined): void;
  stop(): Promise<void>;
}

const GIT_PATH =
  /^\/([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack|HEAD|objects\/.+)$/;

/** Gitea's API lives under /api/v1 (its own base path; GitHub's API is at the root or /api/v3). */
function isGiteaPath(pathname: string): boolean {
  return pathname === '/api/v1' || pathname.startsWith('/api/v1/');
}

/** GitHub's GraphQL endpoint (GHES serves it under /api). */
function isGraphql(req: IncomingMessage, pathname: string): boolean {
  return req.method === 'POST' && (pathname === '/graphql' || pathname === '/api/graphql');
}

/** What the forge records of a smart-HTTP request as it arrives; its status is filled in when the answer is sent. */
function gitRequestEntry(req: IncomingMessage, parsed: URL): GitRequest {
  return {
    method: req.method ?? 'GET',
    path: parsed.pathname + parsed.search,
    contentEncoding: req.headers['content-encoding'],
    chunked: req.method === 'POST' && req.headers['content-length'] === undefined,
    gitProtocol: typeof req.headers['git-protocol'] === 'string' ? req.headers['git-protocol'] : undefined,
    status: 0,
    at: Date.now(),
  };
}

/** 401: GitHub's answer (with WWW-Authenticate, which git needs), or Gitea's APIError body on its API (no WWW-Authenticate, as Gitea). */
function unauthorized(req: IncomingMessage, res: ServerResponse, giteaBody: unknown): void {
  req.resume();
  if (giteaBody !== undefined) {
    res.writeHead(401, { 'content-type': 'application/json;charset=utf-8' });
    res.end(JSON.stringify(giteaBody));
    return;
  }
  res.writeHead(401, { 'www-authenticate': 'Basic realm="KangalPatch lab forge"', 'content-type': 'application/json' });
  res.end(JSON.stringify({ message: 'Requires authentication', documentation_url: 'https://docs.github.com/rest' }));
}

export async function startForge(opts: ForgeOptions = {}): Promise<Forge> {
  const token = opts.token ?? `ghs_${randomBytes(18).toString('hex')}`;
  const tokens = new Set([token]);
  const authorize = (req: IncomingMessage): AuthResult =>
    [...tokens].map((t) => checkAuth(req, t)).find((a) => a.ok) ?? { ok: false, user: '' };
  const dir = makeLabDir('kangal-forge');
  const root = join(dir.path, 'repos');
  let url = '';
  const api = new ForgeApi({ baseUrl: () => url });
  const gitea = new GiteaApi(api, () => url);
  const gitRequests: GitRequest[] = [];
  let fault: ForgeFault | undefined;
  let faultsLeft = Infinity;
  /** The injected fault, when it matches this REST request (counted against its `times`). */
  const faultFor = (req: IncomingMessage): ForgeFault | undefined => {
    const f = fault;
    if (!f?.path.test(new URL(req.url ?? '/', 'http://forge.invalid').pathname)) return undefined;
    if (f.method !== undefined && f.method !== req.method) return undefined;
    if (--faultsLeft <= 0) fault = undefined;
    return f;
  };

  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const parsed = new URL(req.url ?? '/', 'http://forge.invalid');
    const auth = authorize(req);
    const giteaPath = isGiteaPath(parsed.pathname);
    if (!auth.ok) {
      unauthorized(req, res, giteaPath ? gitea.error(401, 'token is required').body : undefined);
      return;
    }
    const m = GIT_PATH.exec(parsed.pathname);
    if (m && api.hasRepo(m[1] ?? '', m[2] ?? '')) {
      const entry = gitRequestEntry(req, parsed);
      gitRequests.push(entry);
      recordV2Command(req, entry);
      res.on('finish', () => {
        entry.status = res.statusCode;
      });
      serveGitCgi(req, res, {
        projectRoot: root,
        pathInfo: `/${m[1]}/${m[2]}.git/${m[3]}`,
        query: parsed.search.slice(1),
        user: auth.user,
      });
      return;
    }
    const served = isGraphql(req, parsed.pathname)
      ? api.handleGraphql(req, res)
      : giteaPath
        ? gitea.handle(req, res, parsed)
        : api.handle(req, res, parsed);
    served.catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `lab forge error: ${err instanceof Error ? err.message : String(err)}` }));
    });
  };

  const server: Server = createServer((req, res) => {
    const f = faultFor(req);
    if (!f) return handler(req, res);
    // Answered with the fault before anything else (auth included), or after doing the work.
    if (f.afterHandling) return handler(req, answeredWithFault(res, f));
    req.resume();
    serveFault(res, f);
  });
  try {
    await Promise.all([
      api.ready(),
      gitea.ready(),
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
      }),
    ]);
  } catch (err) {
    server.close();
    dir.remove();
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  url = `http://127.0.0.1:${port}`;
  let stopped: Promise<void> | undefined;

  return {
    url,
    apiUrl: url,
    giteaApiUrl: `${url}/api/v1`,
    token,
    issueToken: () => {
      const t = `ghs_${randomBytes(18).toString('hex')}`;
      tokens.add(t);
      return t;
    },
    requests: api.requests,
    gitRequests,
    violations: api.violations,
    injectFault: (f) => {
      fault = f;
      faultsLeft = f?.times ?? Infinity;
    },
    addRelease: api.addRelease.bind(api),
    setRateLimit: api.setRateLimit.bind(api),
    async createRepo(owner, name, ropts = {}) {
      const bareDir = join(root, owner, `${name}.git`);
      const defaultBranch = ropts.defaultBranch ?? 'main';
      api.registerRepo(owner, name, defaultBranch, bareDir);
      await initBareRepo(bareDir, defaultBranch, ropts.files);
      return { cloneUrl: `${url}/${owner}/${name}.git`, bareDir };
    },
    stop() {
      stopped ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        dir.remove();
      })();
      return stopped;
    },
  };
}
