// Talking to the plans repository over smart HTTP: the branch head (a ref advertisement, no pack)
// and a shallow fetch of one commit into the cache dir, within the fetch caps. The token goes in an
// Authorization header, never in the URL.
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { join } from 'node:path';
import git from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { remainingMs, type OpContext } from '../../runtime/context.js';
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';
import type { FetchLimits } from '../load/limits.js';
import { CommitRefusedError, gitOutcome } from './errors.js';
import { PackRefusedError, readPack, type PackObject, type ReadPack } from './pack.js';
import { parseAdvertisement, UploadPackResponse, uploadPackRequest } from './upload-pack.js';

export interface Remote {
  url: string;
  branch: string;
  /** undefined: an anonymous (public) repository. */
  token: string | undefined;
  tokenFile: string | undefined;
}

function authHeaders(token: string | undefined): Record<string, string> {
  // Basic with the token as password is what GitHub, Gitea and Forgejo all accept for git.
  return token === undefined
    ? {}
    : { Authorization: `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}` };
}

/** Runs one isomorphic-git call with an HTTP client bound to the context's signal and deadline. */
async function withHttp<T>(
  ctx: OpContext,
  remote: Remote,
  what: string,
  fn: (client: typeof http) => Promise<T>,
): Promise<T> {
  const timeout = AbortSignal.timeout(Math.max(1, Math.min(remainingMs(ctx), 2 ** 31 - 1)));
  const signal = AbortSignal.any([ctx.signal, timeout]);
  const client: typeof http = { request: (req) => http.request({ ...req, signal }) };
  try {
    if (signal.aborted) throw signal.reason;
    return await fn(client);
  } catch (err) {
    throw gitOutcome(err, { what, tokenFile: remote.tokenFile, signal: ctx.signal, deadlineExceeded: timeout.aborted });
  }
}

/** The commit the branch points at, from the ref advertisement alone (protocol v2 `ls-refs` with a prefix). */
export async function remoteHead(ctx: OpContext, remote: Remote): Promise<string> {
  const ref = `refs/heads/${remote.branch}`;
  const refs = await withHttp(ctx, remote, `list refs of ${remote.url}`, (client) =>
    git.listServerRefs({
      http: client,
      url: remote.url,
      headers: authHeaders(remote.token),
      protocolVersion: 2,
      prefix: ref,
    }),
  );
  const head = refs.find((r) => r.ref === ref);
  if (!head) {
    throw new OutcomeError({
      kind: OutcomeKind.Stalled,
      reason: 'BranchNotFound',
      message: `${remote.url} has no branch "${remote.branch}": check --git-branch`,
    });
  }
  return head.oid;
}

export interface FetchCommitInput {
  /** The cache repository the pack is stored in. */
  gitdir: string;
  limits: FetchLimits;
  /** The error of a head already refused, undefined for any other. */
  refused?: ((commit: string) => Error | undefined) | undefined;
}

/**
 * Fetches one commit of the branch without its history into `gitdir` (a pack and the .idx written
 * by pack.ts, the packs of earlier fetches removed) and returns it with the objects that can be
 * read. Every byte the server sends counts against `maxFetchBytes`; nothing is inflated before its
 * size is checked. A commit whose pack breaks a cap is refused with CommitRefusedError; `refused`
 * answers a head already refused without fetching it again.
 */
export async function fetchCommit(
  ctx: OpContext,
  remote: Remote,
  { gitdir, limits, refused }: FetchCommitInput,
): Promise<FetchedCommit> {
  const what = `fetch ${remote.branch} of ${remote.url}`;
  return withHttp(ctx, remote, what, async (client) => {
    const base = remote.url.replace(/\/+$/, '');
    const headers = authHeaders(remote.token);
    const refusal = (commit: string | undefined, why: string): CommitRefusedError =>
      new CommitRefusedError(
        commit,
        why,
        `${what}: ${why}: ${commit === undefined ? 'the head' : `commit ${commit.slice(0, 12)}`} is not applied; the plans applied before stay as they are`,
      );
    const over = `over the cap of ${limits.maxFetchBytes} bytes on one fetch (--git-max-fetch-bytes)`;
    const advertised = await client.request({
      url: `${base}/info/refs?service=git-upload-pack`,
      method: 'GET',
      headers,
      agent: agentFor(base),
    });
    checkStatus(advertised.statusCode);
    const adv = parseAdvertisement(
      await collectCapped(advertised.body, limits.maxFetchBytes, () =>
        refusal(undefined, `the ref advertisement is ${over}`),
      ),
      remote.branch,
    );
    const commit = adv.head;
    if (commit === undefined) {
      throw new OutcomeError({
        kind: OutcomeKind.Stalled,
        reason: 'BranchNotFound',
        message: `${remote.url} has no branch "${remote.branch}": check --git-branch`,
      });
    }
    const before = refused?.(commit);
    if (before) throw before;
    const answer = await client.request({
      url: `${base}/git-upload-pack`,
      method: 'POST',
      headers: {
        ...headers,
        'Content-Type': 'application/x-git-upload-pack-request',
        Accept: 'application/x-git-upload-pack-result',
      },
      // An array is sent whole, with a Content-Length (isomorphic-git's own fetch does the same).
      body: [uploadPackRequest(commit, adv.capabilities)] as unknown as AsyncIterableIterator<Uint8Array>,
      agent: agentFor(base),
    });
    checkStatus(answer.statusCode);
    const response = new UploadPackResponse();
    let received = 0;
    for await (const chunk of answer.body ?? []) {
      received += chunk.byteLength;
      if (received > limits.maxFetchBytes) throw refusal(commit, `the pack is ${over}`);
      response.push(chunk);
    }
    const packBytes = response.pack();
    let read: ReadPack;
    try {
      read = await readPack(packBytes, limits);
    } catch (err) {
      if (err instanceof PackRefusedError && err.overCap) throw refusal(commit, err.message);
      throw err;
    }
    if (!read.objects.has(commit))
      throw refusal(commit, `the commit object is over the cap of ${limits.maxObjectBytes} bytes on one object`);
    await storePack(gitdir, read, packBytes);
    return { commit, objects: read.objects, dropped: read.dropped };
  });
}

export interface FetchedCommit {
  commit: string;
  /** What can be read from `gitdir`, by oid: objects over the cap are absent. */
  objects: ReadonlyMap<string, PackObject>;
  /** Objects of the pack left out (over the cap on one object, or deltas of one). */
  dropped: number;
}

/** Writes the pack and its index (the index last: readers find packs by it), then removes older packs. */
async function storePack(gitdir: string, read: ReadPack, pack: Buffer): Promise<void> {
  const dir = join(gitdir, 'objects', 'pack');
  await mkdir(dir, { recursive: true });
  const name = `pack-${read.packSha}`;
  await writeFile(join(dir, `${name}.pack`), pack);
  await writeFile(join(dir, `${name}.idx`), read.idx);
  for (const f of await readdir(dir)) if (!f.startsWith(`${name}.`)) await rm(join(dir, f), { force: true });
}

/**
 * Node's global agent closes a socket that is quiet for 5 s, and a server compressing a large pack
 * (with no progress, as asked) is quiet longer: that fetch failed with ECONNRESET. The deadline of
 * the context bounds the exchange instead.
 */
const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
const agentFor = (url: string): HttpAgent => (url.startsWith('https:') ? agents.https : agents.http);

/** An HTTP error in the shape gitOutcome reads (isomorphic-git's HttpError). */
function checkStatus(status: number): void {
  if (status >= 200 && status < 300) return;
  throw Object.assign(new Error(`HTTP ${status}`), { code: 'HttpError', data: { statusCode: status } });
}

async function collectCapped(
  body: AsyncIterableIterator<Uint8Array> | undefined,
  max: number,
  over: () => Error,
): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of body ?? []) {
    total += chunk.byteLength;
    if (total > max) throw over();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
