// Reads the plan files of one commit straight from its git tree (no checkout, so nothing from the
// repository ever touches the filesystem as a file): <path>/**/*.yaml|yml, refusing symlinks,
// submodules and odd names with a message, within the repository caps.
import * as fs from 'node:fs';
import git, { type TreeEntry } from 'isomorphic-git';
import type { PlanSource, Problem } from '../load/index.js';
import { DEFAULT_LIMITS, DEFAULT_REPO_LIMITS, type RepoLimits } from '../load/limits.js';
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';

const YAML_FILE = /\.ya?ml$/i;
const Mode = { Tree: '040000', Symlink: '120000', Submodule: '160000' } as const;
// Control characters and backslashes have no business in a plan's path (and fool terminals and Windows
// checkouts); U+FFFD is what isomorphic-git makes of name bytes that are not UTF-8, which no
// message, annotation or report could name faithfully.
// eslint-disable-next-line no-control-regex
const ODD_NAME = /[\u0000-\u001f\u007f\\\ufffd]/;

export interface TreeFiles {
  sources: PlanSource[];
  problems: Problem[];
  /** False when a cap stopped the walk: some files were not read, so nothing may be pruned. */
  complete: boolean;
}

export interface TreeReadOptions {
  gitdir: string;
  commit: string;
  /** Folder in the repository, no leading or trailing slash; '' for the root. */
  path: string;
  limits?: Partial<RepoLimits>;
  /** Per-file byte cap (the loader's). */
  maxFileBytes?: number;
}

interface Walk {
  gitdir: string;
  limits: RepoLimits;
  maxFileBytes: number;
  out: TreeFiles;
  totalBytes: number;
  files: number;
  stopped: boolean;
  /** A folder could not be read at all. */
  unreadable: boolean;
}

const problem = (file: string, message: string): Problem => ({ file, line: 1, column: 1, path: '', message });

export async function readPlanTree(opts: TreeReadOptions): Promise<TreeFiles> {
  const w: Walk = {
    gitdir: opts.gitdir,
    limits: { ...DEFAULT_REPO_LIMITS, ...opts.limits },
    maxFileBytes: opts.maxFileBytes ?? DEFAULT_LIMITS.maxBytes,
    out: { sources: [], problems: [], complete: true },
    totalBytes: 0,
    files: 0,
    stopped: false,
    unreadable: false,
  };
  const root = await rootTree(opts);
  await walkTree(w, root, opts.path);
  return { ...w.out, complete: !w.stopped && !w.unreadable };
}

/** The tree of `path` in the commit, segment by segment (so an unsafe entry elsewhere in a parent never blocks it). */
async function rootTree(opts: TreeReadOptions): Promise<string> {
  const { commit } = await git.readCommit({ fs, gitdir: opts.gitdir, oid: opts.commit });
  let oid = commit.tree;
  for (const segment of opts.path === '' ? [] : opts.path.split('/')) {
    const entries = await readEntries(opts.gitdir, oid);
    const next = entries?.find((e) => e.path === segment && e.mode === Mode.Tree);
    if (!next) {
      // Pruning every plan because a path is mistyped would be a disaster: refuse instead.
      throw new OutcomeError({
        kind: OutcomeKind.Stalled,
        reason: 'GitPathNotFound',
        message: `commit ${opts.commit.slice(0, 12)} has no folder "${opts.path}": check --git-path (to remove every plan, keep the folder, e.g. with a .gitkeep file)`,
      });
    }
    oid = next.oid;
  }
  return oid;
}

/** A tree's entries; undefined when isomorphic-git refuses the tree for an unsafe entry name (it parses whole trees only). */
async function readEntries(gitdir: string, oid: string): Promise<TreeEntry[] | undefined> {
  try {
    return (await git.readTree({ fs, gitdir, oid })).tree;
  } catch (err) {
    if ((err as { code?: unknown }).code === 'UnsafeFilepathError') return undefined;
    throw err;
  }
}

async function walkTree(w: Walk, oid: string, dir: string): Promise<void> {
  const tree = await readEntries(w.gitdir, oid);
  if (!tree) {
    w.out.problems.push(problem(dir, 'this folder has an entry with an unsafe name (such as "..", ".git", backslashes or control characters): rename it; no file of the folder is read'));
    w.unreadable = true;
    return;
  }
  for (const entry of tree) {
    if (w.stopped) return;
    const path = dir === '' ? entry.path : `${dir}/${entry.path}`;
    if (entry.path === '.' || entry.path === '..' || entry.path === '' || ODD_NAME.test(entry.path)) {
      w.out.problems.push(problem(JSON.stringify(path).slice(1, -1), 'odd file name (".", "..", control characters, backslashes or bytes that are not UTF-8) in the plans folder: rename it'));
      continue;
    }
    // Hidden entries (.github, .pre-commit-config.yaml) are tooling, not plans, as for `kangal-patch validate`.
    if (entry.path.startsWith('.')) continue;
    if (entry.mode === Mode.Tree) {
      await walkTree(w, entry.oid, path);
      continue;
    }
    if (entry.mode === Mode.Submodule) {
      w.out.problems.push(problem(path, 'git submodules are not followed in a plans repository: put the plans in the repository itself'));
      continue;
    }
    if (!YAML_FILE.test(entry.path)) continue;
    if (entry.mode === Mode.Symlink) {
      w.out.problems.push(problem(path, 'symbolic links are not followed in a plans repository: commit the file itself'));
      continue;
    }
    await addBlob(w, entry.oid, path);
  }
}

async function addBlob(w: Walk, oid: string, path: string): Promise<void> {
  if (++w.files > w.limits.maxFiles) {
    w.out.problems.push(problem(path, `more than ${w.limits.maxFiles} plan files under the plans folder: the rest are not read`));
    w.stopped = true;
    return;
  }
  const { blob } = await git.readBlob({ fs, gitdir: w.gitdir, oid });
  if (blob.byteLength > w.maxFileBytes) {
    w.out.problems.push(problem(path, `file is ${blob.byteLength} bytes, more than the limit of ${w.maxFileBytes} bytes`));
    return;
  }
  w.totalBytes += blob.byteLength;
  if (w.totalBytes > w.limits.maxTotalBytes) {
    w.out.problems.push(problem(path, `plan files add up to more than ${w.limits.maxTotalBytes} bytes: the rest are not read`));
    w.stopped = true;
    return;
  }
  w.out.sources.push({ file: path, content: blob });
}
