// Writes files on a bot branch as one commit on the freshly fetched remote tip, and pushes without
// force. A rejected push (someone pushed meanwhile) re-fetches and rebuilds, a bounded number of
// times with jitter. Commits a human added are never dropped: ours goes on top of them; when a
// human changed one of the guarded files, nothing is written and the caller is told.
//
// Our commits are known by their SHAs, never by author or committer (anyone can set those): the
// SHAs this writer pushed, and those the caller's record says it pushed (WriteRequest.recorded: a
// commit status it set after the push, which survives a restart and a change of leader), each only
// if the commit changes nothing but the guarded files (core/gitops/bot-branch.ts explains why).
import * as fs from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import git from 'isomorphic-git';
import http from 'isomorphic-git/http/node';
import type { OpContext } from '../../runtime/context.js';
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';
import { gitError } from './git-errors.js';
import { isOwnCommit } from '../../core/gitops/bot-branch.js';
import { blobAt, changedPaths, replaceFiles } from './tree.js';

export interface GitAuthor {
  name: string;
  email: string;
}

export interface BranchWriterOptions {
  /** HTTPS remote (plain HTTP only for loopback; the caller validated it). Never carries credentials. */
  url: string;
  /** Directory for the bare cache repository (created when missing). */
  cacheDir: string;
  /** Read at every authentication, so a rotated token file is picked up. */
  token: () => Promise<string>;
  /** Named in credential errors (a file path); never the token. */
  tokenSource: string;
  /** Author and committer of the bot's commits (not how they are recognised: see above). */
  author: GitAuthor;
  /** Push attempts before giving up with Transient (default 5). */
  maxAttempts?: number;
  random?: () => number;
  /** How far back the branch history is fetched to find the bot's last commit (default 50). */
  historyDepth?: number;
  /** Called after the commit is built and before it is pushed (tests: a concurrent pusher). */
  beforePush?: (branch: string, attempt: number) => Promise<void>;
}

export interface WriteRequest {
  branch: string;
  /** Branch the bot branch starts from when it does not exist yet. */
  base: string;
  /** path → content. */
  files: Readonly<Record<string, string>>;
  message: string;
  /** Files a human commit must not have changed; when one did, nothing is written. Default: the keys of `files`. */
  guarded?: readonly string[];
  /**
   * More files computed from the tree the commit is built on (`read`: a file's text at the fetched
   * tip, undefined when absent), again at every attempt: e.g. the report index, made from the
   * previous one. May throw (nothing is written).
   */
  derive?: (read: (path: string) => Promise<string | undefined>) => Promise<Readonly<Record<string, string>>>;
  /**
   * Whether the caller's durable record says the bot pushed this commit (asked only for commits
   * this process did not push that change nothing but guarded files). Without it, only this
   * process's pushes are the bot's.
   */
  recorded?: (sha: string) => Promise<boolean>;
}

export type WriteResult =
  /** A commit was pushed; `keptHumanCommits` human commits sit below it. */
  | { outcome: 'pushed'; commit: string; parent: string; keptHumanCommits: number; attempts: number }
  /** The branch tip already has exactly these contents. */
  | { outcome: 'unchanged'; commit: string }
  /** A human commit changed a guarded file: the bot leaves the branch alone. */
  | { outcome: 'humanEdited'; commit: string; author: string; path: string };

interface Tip {
  oid: string;
  /** The branch existed on the remote (else `oid` is the base's tip). */
  existed: boolean;
}

/** The human commits above the bot's last commit on the branch (newest first), and that bot commit. */
interface CommitsOnTop {
  human: { oid: string; author: string }[];
  lastBot: string | undefined;
}

export class BranchWriter {
  private readonly gitdir: string;
  private ready: Promise<void> | undefined;
  /** One operation at a time on the shared cache repository. */
  private chain: Promise<unknown> = Promise.resolve();
  /** SHAs this process pushed or found recorded as the bot's (bounded, oldest forgotten first). */
  private readonly ours = new Set<string>();

  constructor(private readonly opts: BranchWriterOptions) {
    const id = createHash('sha256').update(opts.url).digest('hex').slice(0, 16);
    this.gitdir = join(opts.cacheDir, `write-${id}.git`);
  }

  write(ctx: OpContext, req: WriteRequest): Promise<WriteResult> {
    const run = this.chain.then(() => this.writeNow(ctx, req));
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Of `paths`, those whose content at the tip of `branch` is what the tip of `base` holds: a merge
   * leaves them as they are. A pull request lists such a file when the base's history was rewritten
   * under the branch (an amended or force-pushed base): it names a change, but merging changes nothing.
   */
  sameOnBase(ctx: OpContext, branch: string, base: string, paths: readonly string[]): Promise<string[]> {
    const run = this.chain.then(async () => {
      await this.init();
      const head = await this.fetchTip(ctx, { branch, base, files: {}, message: '' });
      const baseTip = await this.fetchTip(ctx, { branch: base, base, files: {}, message: '' });
      if (!head.existed) return [];
      const same: string[] = [];
      for (const path of paths) {
        if ((await blobAt(this.gitdir, head.oid, path)) === (await blobAt(this.gitdir, baseTip.oid, path)))
          same.push(path);
      }
      return same;
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  private init(): Promise<void> {
    this.ready ??= (async () => {
      await mkdir(this.gitdir, { recursive: true });
      await git.init({ fs, gitdir: this.gitdir, bare: true });
      // A plain URL (no credentials: those go through onAuth), so fetched refs land under refs/remotes/origin/.
      await git.addRemote({ fs, gitdir: this.gitdir, remote: 'origin', url: this.opts.url, force: true });
    })();
    return this.ready;
  }

  private readonly auth = {
    onAuth: async () => ({ username: 'x-access-token', password: await this.opts.token() }),
    // A refused token is not retried with the same token: cancel, which maps to Stalled.
    onAuthFailure: () => ({ cancel: true as const }),
  };

  private async writeNow(ctx: OpContext, req: WriteRequest): Promise<WriteResult> {
    await this.init();
    const max = this.opts.maxAttempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      if (ctx.signal.aborted)
        throw new OutcomeError({
          kind: OutcomeKind.Transient,
          reason: 'Aborted',
          message: `write ${req.branch}: cancelled`,
        });
      const tip = await this.fetchTip(ctx, req);
      const built = await this.build(req, tip, ctx.clock.now());
      if (built.outcome !== 'commit') return built.result;
      await this.opts.beforePush?.(req.branch, attempt);
      const pushed = await this.push(req.branch, built.commit);
      if (pushed) this.remember(built.commit);
      if (pushed)
        return {
          outcome: 'pushed',
          commit: built.commit,
          parent: tip.oid,
          keptHumanCommits: built.human,
          attempts: attempt,
        };
      if (attempt >= max) {
        throw new OutcomeError({
          kind: OutcomeKind.Transient,
          reason: 'PushRejected',
          message: `push to ${req.branch} was rejected ${attempt} times (the branch keeps moving); will retry`,
        });
      }
      // Jittered, growing pause before re-fetching: two writers racing should not collide again.
      const ms = Math.round((100 + 200 * (this.opts.random ?? Math.random)()) * attempt);
      await ctx.clock.sleep(ms, ctx.signal);
    }
  }

  /** The remote tip of the branch (fetched), or of the base when the branch does not exist yet. */
  private async fetchTip(ctx: OpContext, req: WriteRequest): Promise<Tip> {
    const what = `fetch ${req.branch} from ${this.opts.url}`;
    try {
      const refs = await git.listServerRefs({
        http,
        url: this.opts.url,
        prefix: `refs/heads/${req.branch}`,
        ...this.auth,
      });
      const exact = refs.find((r) => r.ref === `refs/heads/${req.branch}`);
      const ref = exact ? req.branch : req.base;
      const depth = exact ? (this.opts.historyDepth ?? 50) : 1;
      const res = await git.fetch({
        fs,
        http,
        gitdir: this.gitdir,
        remote: 'origin',
        ref,
        singleBranch: true,
        depth,
        tags: false,
        ...this.auth,
      });
      if (ctx.signal.aborted)
        throw new OutcomeError({ kind: OutcomeKind.Transient, reason: 'Aborted', message: `${what}: cancelled` });
      if (!res.fetchHead)
        throw new OutcomeError({
          kind: OutcomeKind.Stalled,
          reason: 'NoBaseBranch',
          message: `${what}: the remote has neither ${req.branch} nor the base branch ${req.base}`,
        });
      return { oid: res.fetchHead, existed: exact !== undefined };
    } catch (err) {
      throw gitError(err, what, this.opts.tokenSource);
    }
  }

  private async build(
    req: WriteRequest,
    tip: Tip,
    nowMs: number,
  ): Promise<{ outcome: 'commit'; commit: string; human: number } | { outcome: 'done'; result: WriteResult }> {
    const gitdir = this.gitdir;
    let human = 0;
    if (tip.existed) {
      const found = await this.humanCommitsOnTop(tip.oid, req);
      human = found.human.length;
      if (human > 0) {
        const edited = await this.guardedEdit(req, tip.oid, found);
        if (edited) return { outcome: 'done', result: edited };
      }
    }
    const parent = await git.readCommit({ fs, gitdir, oid: tip.oid });
    const derived = req.derive
      ? await req.derive(async (path) => {
          const oid = await blobAt(gitdir, tip.oid, path);
          return oid === undefined
            ? undefined
            : Buffer.from((await git.readBlob({ fs, gitdir, oid })).blob).toString('utf8');
        })
      : {};
    const tree = await replaceFiles(gitdir, parent.commit.tree, { ...req.files, ...derived });
    // Only an existing branch can already hold the content; a new branch always gets its commit.
    if (tip.existed && tree === parent.commit.tree)
      return { outcome: 'done', result: { outcome: 'unchanged', commit: tip.oid } };
    const seconds = Math.floor(nowMs / 1000);
    const who = { name: this.opts.author.name, email: this.opts.author.email, timestamp: seconds, timezoneOffset: 0 };
    const commit = await git.writeCommit({
      fs,
      gitdir,
      commit: {
        message: req.message.endsWith('\n') ? req.message : `${req.message}\n`,
        tree,
        parent: [tip.oid],
        author: who,
        committer: who,
      },
    });
    return { outcome: 'commit', commit, human };
  }

  /** The first guarded file whose content at the tip is not what the bot's last commit holds: a human changed it. */
  private async guardedEdit(req: WriteRequest, tip: string, found: CommitsOnTop): Promise<WriteResult | undefined> {
    const gitdir = this.gitdir;
    for (const path of req.guarded ?? Object.keys(req.files)) {
      const mine = found.lastBot === undefined ? undefined : await blobAt(gitdir, found.lastBot, path);
      const theirs = await blobAt(gitdir, tip, path);
      if (mine !== theirs) {
        const by = found.human.find(() => true)?.author ?? 'someone';
        return { outcome: 'humanEdited', commit: tip, author: by, path };
      }
    }
    return undefined;
  }

  private remember(sha: string): void {
    this.ours.add(sha);
    if (this.ours.size > 10_000) this.ours.delete(this.ours.values().next().value as string);
  }

  /** Commits from the tip down (first parents) until the bot's own, and that bot commit. */
  private async humanCommitsOnTop(tip: string, req: WriteRequest): Promise<CommitsOnTop> {
    const human: { oid: string; author: string }[] = [];
    const guarded = req.guarded ?? Object.keys(req.files);
    let oid: string | undefined = tip;
    while (oid !== undefined && human.length < (this.opts.historyDepth ?? 50)) {
      let c;
      try {
        c = await git.readCommit({ fs, gitdir: this.gitdir, oid });
      } catch {
        break; // past the shallow boundary
      }
      if (this.ours.has(oid)) return { human, lastBot: oid };
      const parents = c.commit.parent;
      const changed = parents.length === 1 ? await changedPaths(this.gitdir, parents[0] as string, oid) : undefined;
      if (
        req.recorded &&
        isOwnCommit({ parents: parents.length, changed }, guarded, true) &&
        (await req.recorded(oid))
      ) {
        this.remember(oid);
        return { human, lastBot: oid };
      }
      human.push({ oid, author: `${c.commit.author.name} <${c.commit.author.email}>` });
      oid = parents[0];
    }
    return { human, lastBot: undefined };
  }

  /** True when pushed; false when the remote rejected it as not a fast-forward. */
  private async push(branch: string, commit: string): Promise<boolean> {
    const local = `refs/kangal-write/${branch}`;
    await git.writeRef({ fs, gitdir: this.gitdir, ref: local, value: commit, force: true });
    try {
      const res = await git.push({
        fs,
        http,
        gitdir: this.gitdir,
        url: this.opts.url,
        ref: local,
        remoteRef: `refs/heads/${branch}`,
        ...this.auth,
      });
      if (res.ok && res.refs[`refs/heads/${branch}`]?.ok !== false) return true;
      return false;
    } catch (err) {
      if ((err as { code?: string }).code === 'PushRejectedError') return false;
      throw gitError(err, `push ${branch} to ${this.opts.url}`, this.opts.tokenSource);
    }
  }
}
