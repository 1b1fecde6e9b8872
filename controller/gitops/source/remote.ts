// Talking to the plans repository over smart HTTP: the branch head (a ref advertisement, no pack)
// and a shallow fetch of one commit into the cache dir. The token goes in an Authorization header,
// never in the URL.
import * as fs from 'node:fs';
import git from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import { remainingMs, type OpContext } from '../../runtime/context.js';
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';
import { gitOutcome } from './errors.js';

export interface Remote {
  url: string;
  branch: string;
  /** undefined: an anonymous (public) repository. */
  token: string | undefined;
  tokenFile: string | undefined;
}

function authHeaders(token: string | undefined): Record<string, string> {
  // Basic with the token as password is what GitHub, Gitea and Forgejo all accept for git.
  return token === undefined ? {} : { Authorization: `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}` };
}

/** Runs one isomorphic-git call with an HTTP client bound to the context's signal and deadline. */
async function withHttp<T>(ctx: OpContext, remote: Remote, what: string, fn: (client: typeof http) => Promise<T>): Promise<T> {
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
    git.listServerRefs({ http: client, url: remote.url, headers: authHeaders(remote.token), protocolVersion: 2, prefix: ref }),
  );
  const head = refs.find((r) => r.ref === ref);
  if (!head) {
    throw new OutcomeError({ kind: OutcomeKind.Stalled, reason: 'BranchNotFound', message: `${remote.url} has no branch "${remote.branch}": check --git-branch` });
  }
  return head.oid;
}

/** Fetches the branch head shallow (depth 1, that branch only) into `gitdir`; returns the commit fetched. */
export async function fetchHead(ctx: OpContext, remote: Remote, gitdir: string): Promise<string> {
  await git.init({ fs, gitdir, bare: true, defaultBranch: remote.branch });
  // fetch records the remote-tracking ref through the remote's refspec.
  await git.addRemote({ fs, gitdir, remote: 'origin', url: remote.url, force: true });
  const result = await withHttp(ctx, remote, `fetch ${remote.branch} of ${remote.url}`, (client) =>
    git.fetch({ fs, http: client, gitdir, remote: 'origin', url: remote.url, ref: remote.branch, remoteRef: remote.branch, singleBranch: true, depth: 1, tags: false, headers: authHeaders(remote.token) }),
  );
  if (!result.fetchHead) {
    throw new OutcomeError({ kind: OutcomeKind.Stalled, reason: 'BranchNotFound', message: `${remote.url} has no branch "${remote.branch}": check --git-branch` });
  }
  return result.fetchHead;
}
