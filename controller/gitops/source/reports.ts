// The rollout reports other clusters' controllers wrote under status/<cluster>/ in one commit, read
// straight from its git tree (promotion evidence): <plan>.yaml and its <plan>.sig, nothing else,
// within caps. A missing status/ folder is no report at all, not an error.
import * as fs from 'node:fs';
import git, { type TreeEntry } from 'isomorphic-git';
import type { FetchedObjects } from './tree.js';

export interface ReportTreeLimits {
  maxFiles: number;
  maxFileBytes: number;
}

const DEFAULT_REPORT_LIMITS: ReportTreeLimits = { maxFiles: 4000, maxFileBytes: 256 * 1024 };
const REPORT_FILE = /^[a-z0-9][-a-z0-9.]*\.(yaml|sig)$/;
const CLUSTER_DIR = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const TREE = '040000';
const BLOB = '100644';

export interface ReportTree {
  /** path → text, e.g. status/staging/nodes-v1-12-5.yaml */
  files: Map<string, string>;
  /** Files skipped (too big, over the count cap), with why. */
  skipped: { file: string; reason: string }[];
}

/** A tree's entries; none when the tree was over the cap on one fetched object (it is not in the store). */
const entries = async (s: FetchedObjects, oid: string) =>
  s.objects.has(oid) ? (await git.readTree({ fs, gitdir: s.gitdir, oid, cache: s.cache })).tree : [];

export async function readReportTree(
  store: FetchedObjects,
  limits: ReportTreeLimits = DEFAULT_REPORT_LIMITS,
): Promise<ReportTree> {
  const out: ReportTree = { files: new Map(), skipped: [] };
  const { commit: c } = await git.readCommit({ fs, gitdir: store.gitdir, oid: store.commit, cache: store.cache });
  const status = (await entries(store, c.tree)).find((e) => e.path === 'status' && e.mode === TREE);
  if (!status) return out;
  for (const dir of await entries(store, status.oid)) {
    if (dir.mode !== TREE || !CLUSTER_DIR.test(dir.path)) continue;
    await readClusterFolder(store, dir, out, limits);
  }
  return out;
}

/** The report files of one cluster's folder status/<cluster>/, added to `out` within the caps. */
async function readClusterFolder(
  store: FetchedObjects,
  dir: TreeEntry,
  out: ReportTree,
  limits: ReportTreeLimits,
): Promise<void> {
  for (const f of await entries(store, dir.oid)) {
    const path = `status/${dir.path}/${f.path}`;
    if (f.mode !== BLOB || !REPORT_FILE.test(f.path)) continue;
    if (out.files.size >= limits.maxFiles) {
      out.skipped.push({ file: path, reason: `more than ${limits.maxFiles} report files: not read` });
      continue;
    }
    // The size comes from the fetch: a report over the cap is skipped without inflating it.
    const size = store.objects.get(f.oid)?.size;
    if (size === undefined || size > limits.maxFileBytes) {
      out.skipped.push({
        file: path,
        reason: `${size === undefined ? `more than ${store.maxObjectBytes}` : size} bytes, over the ${limits.maxFileBytes}-byte cap for a report`,
      });
      continue;
    }
    const { blob } = await git.readBlob({ fs, gitdir: store.gitdir, oid: f.oid, cache: store.cache });
    out.files.set(path, Buffer.from(blob).toString('utf8'));
  }
}
