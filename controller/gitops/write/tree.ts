// Replacing files inside a git tree without a checkout: blobs and trees are written bottom-up into
// the object store and the new root tree's oid is returned. Unchanged subtrees keep their oids.
import * as fs from 'node:fs';
import git, { type TreeEntry } from 'isomorphic-git';

async function entriesOf(gitdir: string, oid: string | undefined): Promise<TreeEntry[]> {
  if (oid === undefined) return [];
  return (await git.readTree({ fs, gitdir, oid })).tree;
}

/** Writes `files` (path → content, `/`-separated) over the tree `rootOid`; returns the new root oid. */
export async function replaceFiles(gitdir: string, rootOid: string | undefined, files: Readonly<Record<string, string>>): Promise<string> {
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
