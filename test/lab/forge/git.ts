// Bare repositories and the smart-HTTP endpoint of the lab forge: `git http-backend` run as a CGI
// per request, plus the git plumbing the forge needs (seed commits, merges) run in the bare repo.
import { execFile, spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export interface GitResult {
  stdout: string;
  stderr: string;
  code: number;
}

/**
 * Runs `git` (dying with this process) and resolves with its output; never rejects on a non-zero
 * exit. Without an explicit `cwd` it runs in the temp dir with discovery stopped there, so a
 * command meant for a lab repository can never act on the checkout the tests run from.
 */
export function runGit(
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<GitResult> {
  const cwd = opts.cwd ?? tmpdir();
  const guard = opts.cwd === undefined ? { GIT_CEILING_DIRECTORIES: dirname(cwd) } : {};
  return new Promise((resolve, reject) => {
    const child = execFile(
      'setpriv',
      ['--pdeathsig', 'KILL', '--', 'git', ...args],
      { cwd, env: { ...process.env, ...gitIdentityEnv(), ...guard, ...opts.env }, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') {
          reject(new Error(`git ${args[0] ?? ''}: ${err.message}`));
          return;
        }
        resolve({ stdout, stderr, code: err ? Number(err.code) : 0 });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

/** Like runGit, but throws with git's stderr on failure and returns trimmed stdout. */
export async function git(
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string } = {},
): Promise<string> {
  const r = await runGit(args, opts);
  if (r.code !== 0) throw new Error(`git ${args.join(' ')} failed (${r.code}): ${r.stderr.trim()}`);
  return r.stdout.trim();
}

function gitIdentityEnv(): NodeJS.ProcessEnv {
  return {
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'Lab Forge',
    GIT_AUTHOR_EMAIL: 'forge@lab.invalid',
    GIT_COMMITTER_NAME: 'Lab Forge',
    GIT_COMMITTER_EMAIL: 'forge@lab.invalid',
  };
}

/** Creates a bare repository that accepts pushes over HTTP, optionally with a first commit holding `files`. */
export async function initBareRepo(
  bareDir: string,
  defaultBranch: string,
  files?: Record<string, string>,
): Promise<void> {
  await mkdir(bareDir, { recursive: true });
  await git(['init', '--quiet', '--bare', `--initial-branch=${defaultBranch}`, bareDir]);
  await git(['--git-dir', bareDir, 'config', 'http.receivepack', 'true']);
  await git(['--git-dir', bareDir, 'config', 'uploadpack.allowAnySHA1InWant', 'true']);
  if (!files || Object.keys(files).length === 0) return;
  const tmp = await mkdtemp(join(bareDir, 'seed-'));
  try {
    const env = { GIT_INDEX_FILE: join(tmp, 'index') };
    for (const [path, content] of Object.entries(files)) {
      const blob = await git(['--git-dir', bareDir, 'hash-object', '-w', '--stdin'], { input: content });
      await git(['--git-dir', bareDir, 'update-index', '--add', '--cacheinfo', `100644,${blob},${path}`], { env });
    }
    const tree = await git(['--git-dir', bareDir, 'write-tree'], { env });
    const commit = await git(['--git-dir', bareDir, 'commit-tree', tree, '-m', 'Initial commit']);
    await git(['--git-dir', bareDir, 'update-ref', `refs/heads/${defaultBranch}`, commit, '']);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

export async function resolveRef(bareDir: string, ref: string): Promise<string | undefined> {
  const r = await runGit(['--git-dir', bareDir, 'rev-parse', '--verify', '--quiet', `${ref}^{commit}`]);
  return r.code === 0 ? r.stdout.trim() : undefined;
}

/** A file a pull request changes, as both forges list them: against the merge base, renames found. */
export interface ChangedFile {
  filename: string;
  previousFilename?: string;
  status: 'added' | 'removed' | 'modified' | 'renamed' | 'copied' | 'changed';
  /** The blob at the head (at the base for a removed file). */
  sha: string;
  additions: number;
  deletions: number;
}

const RAW_STATUS: Record<string, ChangedFile['status']> = {
  A: 'added',
  D: 'removed',
  M: 'modified',
  R: 'renamed',
  C: 'copied',
  T: 'changed',
};

/** The files `head` changes since its merge base with `base` (what a merge would bring), in path order. */
export async function changedFiles(bareDir: string, base: string, head: string): Promise<ChangedFile[]> {
  const mb = await runGit(['--git-dir', bareDir, 'merge-base', base, head]);
  const from = mb.code === 0 ? mb.stdout.trim() : base;
  const raw = (await git(['--git-dir', bareDir, 'diff', '--raw', '-M', '-z', from, head])).split('\0');
  const num = (await git(['--git-dir', bareDir, 'diff', '--numstat', '-M', '-z', from, head])).split('\0');
  const out: ChangedFile[] = [];
  for (let i = 0, n = 0; i < raw.length - 1;) {
    const entry = rawEntry(raw, i);
    i = entry.next;
    // numstat: `add\tdel\tpath`, or `add\tdel\t` then both paths for a rename.
    const [add, del, path] = (num[n++] ?? '').split('\t');
    if (path === '') n += 2;
    out.push({ ...entry.file, additions: Number(add) || 0, deletions: Number(del) || 0 });
  }
  return out;
}

/** One record of `git diff --raw -z`: `:oldmode newmode oldsha newsha status`, then one path, or two for a rename or copy. */
function rawEntry(raw: string[], at: number): { file: Omit<ChangedFile, 'additions' | 'deletions'>; next: number } {
  let i = at;
  const [, , oldSha, newSha, status] = (raw[i++] ?? '').split(' ');
  const kind = RAW_STATUS[(status ?? '').charAt(0)] ?? 'changed';
  const first = raw[i++] ?? '';
  const second = kind === 'renamed' || kind === 'copied' ? (raw[i++] ?? '') : undefined;
  const file = {
    filename: second ?? first,
    ...(second === undefined ? {} : { previousFilename: first }),
    status: kind,
    sha: (kind === 'removed' ? oldSha : newSha) ?? '',
  };
  return { file, next: i };
}

export type MergeOutcome = { ok: true; sha: string } | { ok: false; reason: 'conflict' | 'head-moved'; detail: string };

/**
 * Merges `headSha` into branch `base` inside the bare repo the way GitHub's merge button does: a
 * merge commit with two parents (`merge-tree --write-tree`, `commit-tree`; one parent for a squash), and the branch moved
 * with a compare-and-swap `update-ref` so a concurrent push is never overwritten.
 */
/** A merge as the merge button asks for it: `headSha` into branch `base`, with this commit message. */
export interface MergeInput {
  base: string;
  headSha: string;
  message: string;
  /** One parent (the base) instead of two. */
  squash?: boolean;
}

export async function mergeInBare(
  bareDir: string,
  { base, headSha, message, squash = false }: MergeInput,
): Promise<MergeOutcome> {
  const baseSha = await resolveRef(bareDir, `refs/heads/${base}`);
  if (!baseSha) return { ok: false, reason: 'head-moved', detail: `base branch ${base} does not exist` };
  const mt = await runGit([
    '--git-dir',
    bareDir,
    'merge-tree',
    '--write-tree',
    '--name-only',
    '--no-messages',
    baseSha,
    headSha,
  ]);
  if (mt.code === 1) return { ok: false, reason: 'conflict', detail: mt.stdout.trim().split('\n').slice(1).join(', ') };
  if (mt.code !== 0) throw new Error(`git merge-tree failed (${mt.code}): ${mt.stderr.trim()}`);
  const tree = mt.stdout.trim().split('\n')[0] ?? '';
  const parents = squash ? ['-p', baseSha] : ['-p', baseSha, '-p', headSha];
  const sha = await git(['--git-dir', bareDir, 'commit-tree', tree, ...parents, '-m', message]);
  const upd = await runGit([
    '--git-dir',
    bareDir,
    'update-ref',
    '-m',
    'merge (lab forge)',
    `refs/heads/${base}`,
    sha,
    baseSha,
  ]);
  if (upd.code !== 0) return { ok: false, reason: 'head-moved', detail: upd.stderr.trim() };
  return { ok: true, sha };
}

/**
 * Serves one smart-HTTP request with `git http-backend` as a CGI: request body streamed to its
 * stdin (gzip bodies are inflated by http-backend itself via HTTP_CONTENT_ENCODING), its CGI
 * headers parsed and the rest streamed back.
 */
/** What http-backend is told of the request beyond its headers: where the repositories are, which one, and who asks. */
export interface GitCgiInput {
  projectRoot: string;
  pathInfo: string;
  query: string;
  user: string;
}

export function serveGitCgi(
  req: IncomingMessage,
  res: ServerResponse,
  { projectRoot, pathInfo, query, user }: GitCgiInput,
): void {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    GIT_PROJECT_ROOT: projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    REMOTE_USER: user,
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    REQUEST_METHOD: req.method ?? 'GET',
    PATH_INFO: pathInfo,
    QUERY_STRING: query,
    CONTENT_TYPE: req.headers['content-type'] ?? '',
    SERVER_PROTOCOL: 'HTTP/1.1',
    GATEWAY_INTERFACE: 'CGI/1.1',
  };
  const length = req.headers['content-length'];
  if (length !== undefined) env.CONTENT_LENGTH = length;
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined) env.HTTP_CONTENT_ENCODING = encoding;
  const protocol = req.headers['git-protocol'];
  if (typeof protocol === 'string') {
    env.GIT_PROTOCOL = protocol;
    env.HTTP_GIT_PROTOCOL = protocol;
  }
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', 'git', 'http-backend'], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d: string) => {
    stderr += d;
  });
  req.pipe(child.stdin);
  child.stdin.on('error', () => undefined);
  req.on('aborted', () => child.kill('SIGKILL'));

  let head = Buffer.alloc(0);
  let headersDone = false;
  child.stdout.on('data', (chunk: Buffer) => {
    if (headersDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const split = findHeaderEnd(head);
    if (!split) return;
    headersDone = true;
    writeCgiHeaders(res, head.subarray(0, split.start).toString('latin1'));
    const rest = head.subarray(split.end);
    if (rest.length > 0) res.write(rest);
  });
  child.on('error', (err) => {
    if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`git http-backend failed to start: ${err.message}\n`);
  });
  child.on('close', (code) => {
    if (!headersDone) {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`git http-backend exited ${code}: ${stderr}\n`);
      return;
    }
    res.end();
  });
}

function findHeaderEnd(buf: Buffer): { start: number; end: number } | undefined {
  const crlf = buf.indexOf('\r\n\r\n');
  const lf = buf.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { start: crlf, end: crlf + 4 };
  if (lf >= 0) return { start: lf, end: lf + 2 };
  return undefined;
}

function writeCgiHeaders(res: ServerResponse, block: string): void {
  let status = 200;
  let message = 'OK';
  const headers: Record<string, string | string[]> = {};
  for (const line of block.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const name = line.slice(0, i).trim();
    const value = line.slice(i + 1).trim();
    if (name.toLowerCase() === 'status') {
      const m = /^(\d{3})\s*(.*)$/.exec(value);
      if (m) {
        status = Number(m[1]);
        message = m[2] || message;
      }
      continue;
    }
    const prev = headers[name];
    headers[name] = prev === undefined ? value : [...(Array.isArray(prev) ? prev : [prev]), value];
  }
  res.writeHead(status, message, headers);
}
