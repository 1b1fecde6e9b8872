// Reads the plan files of one commit straight from its git tree (no checkout, so nothing from the
// repository ever touches the filesystem as a file): <path>/**/*.yaml|yml, refusing symlinks,
// submodules and odd names with a message, within the repository caps. A file's size is checked
// before it is read (the sizes come from the fetch, pack.ts), so a huge file is never inflated.
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
  /** False when a folder could not be read: some files were not read, so nothing may be pruned. */
  complete: boolean;
  /** Set when the commit breaks a repository cap (files, bytes): nothing of it may be applied. */
  refused?: Problem;
}

/** The objects of one fetched commit (remote.ts fetchCommit). */
export interface FetchedObjects {
  gitdir: string;
  commit: string;
  /** Readable objects by oid with their sizes; a missing one was over `maxObjectBytes` (or a delta of one). */
  objects: ReadonlyMap<string, { type: string; size: number }>;
  /** isomorphic-git's cache, shared by the reads of one snapshot. */
  cache: object;
  maxObjectBytes: number;
}

export interface TreeReadOptions extends FetchedObjects {
  /** Folder in the repository, no leading or trailing slash; '' for the root. */
  path: string;
  limits?: Partial<RepoLimits>;
  /** Per-file byte cap (the loader's). */
  maxFileBytes?: number;
}

interface Walk {
  store: FetchedObjects;
  /** The plans folder, named in the messages of the caps. */
  root: string;
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
    store: opts,
    root: opts.path === '' ? 'the repository root' : `"${opts.path}"`,
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
  if (w.out.refused) return { sources: [], problems: [], complete: false, refused: w.out.refused };
  return { ...w.out, complete: !w.unreadable };
}

/** The tree of `path` in the commit, segment by segment (so an unsafe entry elsewhere in a parent never blocks it). */
async function rootTree(opts: TreeReadOptions): Promise<string> {
  const { commit } = await git.readCommit({ fs, gitdir: opts.gitdir, oid: opts.commit, cache: opts.cache });
  let oid = commit.tree;
  for (const segment of opts.path === '' ? [] : opts.path.split('/')) {
    if (!opts.objects.has(oid)) {
      throw new OutcomeError({
        kind: OutcomeKind.Stalled,
        reason: 'GitTreeTooLarge',
        message: `commit ${opts.commit.slice(0, 12)}: a folder on the way to "${opts.path}" lists more than ${opts.maxObjectBytes} bytes of entries, the cap on one object fetched from Git`,
      });
    }
    const entries = await readEntries(opts, oid);
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
async function readEntries(store: FetchedObjects, oid: string): Promise<TreeEntry[] | undefined> {
  try {
    return (await git.readTree({ fs, gitdir: store.gitdir, oid, cache: store.cache })).tree;
  } catch (err) {
    if ((err as { code?: unknown }).code === 'UnsafeFilepathError') return undefined;
    throw err;
  }
}

async function walkTree(w: Walk, oid: string, dir: string): Promise<void> {
  if (!w.store.objects.has(oid)) {
    w.out.problems.push(
      problem(
        dir,
        `this folder lists more than ${w.store.maxObjectBytes} bytes of entries, the cap on one object fetched from Git; no file of the folder is read`,
      ),
    );
    w.unreadable = true;
    return;
  }
  const tree = await readEntries(w.store, oid);
  if (!tree) {
    w.out.problems.push(
      problem(
        dir,
        'this folder has an entry with an unsafe name (such as "..", ".git", backslashes or control characters): rename it; no file of the folder is read',
      ),
    );
    w.unreadable = true;
    return;
  }
  for (const entry of tree) {
    if (w.stopped) return;
    await walkEntry(w, entry, dir);
  }
}

/** One entry of a folder: a folder is walked and a YAML file read; odd names, submodules and symbolic links are problems. */
async function walkEntry(w: Walk, entry: TreeEntry, dir: string): Promise<void> {
  const path = dir === '' ? entry.path : `${dir}/${entry.path}`;
  if (entry.path === '.' || entry.path === '..' || entry.path === '' || ODD_NAME.test(entry.path)) {
    w.out.problems.push(
      problem(
        JSON.stringify(path).slice(1, -1),
        'odd file name (".", "..", control characters, backslashes or bytes that are not UTF-8) in the plans folder: rename it',
      ),
    );
    return;
  }
  // Hidden entries (.github, .pre-commit-config.yaml) are tooling, not plans, as for `kangal-patch validate`.
  if (entry.path.startsWith('.')) return;
  if (entry.mode === Mode.Tree) {
    await walkTree(w, entry.oid, path);
    return;
  }
  if (entry.mode === Mode.Submodule) {
    w.out.problems.push(
      problem(path, 'git submodules are not followed in a plans repository: put the plans in the repository itself'),
    );
    return;
  }
  if (!YAML_FILE.test(entry.path)) return;
  if (entry.mode === Mode.Symlink) {
    w.out.problems.push(problem(path, 'symbolic links are not followed in a plans repository: commit the file itself'));
    return;
  }
  await addBlob(w, entry.oid, path);
}

const NOTHING_APPLIED = 'nothing of this commit is applied; the plans applied before stay as they are';

async function addBlob(w: Walk, oid: string, path: string): Promise<void> {
  if (++w.files > w.limits.maxFiles) {
    w.out.refused = problem(
      path,
      `over the cap of ${w.limits.maxFiles} plan files per commit under ${w.root}: ${NOTHING_APPLIED}`,
    );
    w.stopped = true;
    return;
  }
  // The size comes from the fetch: a file over the cap is refused without inflating it.
  const size = w.store.objects.get(oid)?.size;
  if (size === undefined) {
    w.out.problems.push(
      problem(
        path,
        `file is more than ${w.store.maxObjectBytes} bytes (the cap on one object fetched from Git; a plan file may have at most ${w.maxFileBytes} bytes): not read`,
      ),
    );
    return;
  }
  if (size > w.maxFileBytes) {
    w.out.problems.push(problem(path, `file is ${size} bytes, more than the limit of ${w.maxFileBytes} bytes`));
    return;
  }
  w.totalBytes += size;
  if (w.totalBytes > w.limits.maxTotalBytes) {
    w.out.refused = problem(
      path,
      `over the cap of ${w.limits.maxTotalBytes} bytes of plan files per commit under ${w.root}: ${NOTHING_APPLIED}`,
    );
    w.stopped = true;
    return;
  }
  const { blob } = await git.readBlob({ fs, gitdir: w.store.gitdir, oid, cache: w.store.cache });
  w.out.sources.push({ file: path, content: blob });
}
