// Replacing files inside a git tree without a checkout: blobs and trees are written bottom-up into
// the object store and the new root tree's oid is returned. Unchanged subtrees keep their oids.
import * as fs from 'node:fs';
import git, { type TreeEntry } from 'isomorphic-git';

async function entriesOf(gitdir: string, oid: string | undefined): Promise<TreeEntry[]> {
  if (oid === undefined) return [];
  return (await git.readTree({ fs, gitdir, oid })).tree;
}

/** Writes `files` (path → content, `/`-separated) over the tree `rootOid`; returns the new root oid. */
export async function replaceFiles(
  gitdir: string,
  rootOid: string | undefined,
  files: Readonly<Record<string, string>>,
): Promise<string> {
  const here: Record<string, string> = {};
  const below = new Map<string, Record<string, string>>();
  for (const [path, content] of Object.entries(files)) {
    const slash = path.indexOf('/');
    if (slash < 0) here[path] = content;
    else {
      const dir = path.slice(0, slash);
      const sub = below.get(dir) ?? {};
      sub[path.slice(slash + 1)] = content;
      below.set(dir, sub);
    }
  }
  const entries = await entriesOf(gitdir, rootOid);
  const byName = new Map(entries.map((e) => [e.path, e]));
  for (const [name, content] of Object.entries(here)) {
    const oid = await git.writeBlob({ fs, gitdir, blob: Buffer.from(content, 'utf8') });
    byName.set(name, { mode: '100644', path: name, oid, type: 'blob' });
  }
  for (const [dir, sub] of below) {
    const existing = byName.get(dir);
    const oid = await replaceFiles(gitdir, existing?.type === 'tree' ? existing.oid : undefined, sub);
    byName.set(dir, { mode: '040000', path: dir, oid, type: 'tree' });
  }
  return git.writeTree({ fs, gitdir, tree: [...byName.values()] });
}

/** The blob oid at `path` in the tree of commit `commitOid`, undefined when absent. */
export async function blobAt(gitdir: string, commitOid: string, path: string): Promise<string | undefined> {
  const parts = path.split('/');
  let tree = (await git.readCommit({ fs, gitdir, oid: commitOid })).commit.tree;
  for (const [i, part] of parts.entries()) {
    const entry = (await git.readTree({ fs, gitdir, oid: tree })).tree.find((e) => e.path === part);
    if (!entry) return undefined;
    if (i === parts.length - 1) return entry.type === 'blob' ? entry.oid : undefined;
    if (entry.type !== 'tree') return undefined;
    tree = entry.oid;
  }
  return undefined;
}

/**
 * The paths whose blobs differ between the trees of two commits (at most `max`; undefined when a
 * commit or tree is not in the cache, e.g. past the shallow boundary).
 */
export async function changedPaths(
  gitdir: string,
  fromCommit: string,
  toCommit: string,
  max = 200,
): Promise<string[] | undefined> {
  try {
    const from = (await git.readCommit({ fs, gitdir, oid: fromCommit })).commit.tree;
    const to = (await git.readCommit({ fs, gitdir, oid: toCommit })).commit.tree;
    const out: string[] = [];
    await diffTrees({ gitdir, out, max }, from, to, '');
    return out;
  } catch {
    return undefined;
  }
}

/** One diff of two commits' trees: where the trees are read, and the changed paths found so far (at most `max`). */
interface TreeDiff {
  gitdir: string;
  out: string[];
  max: number;
}

async function diffTrees(d: TreeDiff, a: string | undefined, b: string | undefined, prefix: string): Promise<void> {
  const { gitdir, out, max } = d;
  if (a === b || out.length >= max) return;
  const left = new Map((await entriesOf(gitdir, a)).map((e) => [e.path, e]));
  const right = new Map((await entriesOf(gitdir, b)).map((e) => [e.path, e]));
  for (const name of [...new Set([...left.keys(), ...right.keys()])].sort()) {
    await diffEntry(d, left.get(name), right.get(name), `${prefix}${name}`);
    if (out.length >= max) return;
  }
}

const folder = (e: TreeEntry | undefined): string | undefined => (e?.type === 'tree' ? e.oid : undefined);
const file = (e: TreeEntry | undefined): boolean => e !== undefined && e.type !== 'tree';

/** One name of two trees: a file on either side is a changed path (a file replaced by a folder too); folders are walked. */
async function diffEntry(d: TreeDiff, l: TreeEntry | undefined, r: TreeEntry | undefined, path: string): Promise<void> {
  if (l?.oid === r?.oid && l?.mode === r?.mode) return;
  if (file(l) || file(r)) d.out.push(path);
  if (folder(l) !== undefined || folder(r) !== undefined) await diffTrees(d, folder(l), folder(r), `${path}/`);
}
