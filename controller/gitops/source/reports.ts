// The rollout reports other clusters' controllers wrote under status/<cluster>/ in one commit, read
// straight from its git tree (promotion evidence): <plan>.yaml and its <plan>.sig, nothing else,
// within caps. A missing status/ folder is no report at all, not an error.
import * as fs from 'node:fs';
import git from 'isomorphic-git';

export interface ReportTreeLimits {
  maxFiles: number;
  maxFileBytes: number;
}

export const DEFAULT_REPORT_LIMITS: ReportTreeLimits = { maxFiles: 4000, maxFileBytes: 256 * 1024 };
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

const entries = async (gitdir: string, oid: string) => (await git.readTree({ fs, gitdir, oid })).tree;

export async function readReportTree(gitdir: string, commit: string, limits: ReportTreeLimits = DEFAULT_REPORT_LIMITS): Promise<ReportTree> {
  const out: ReportTree = { files: new Map(), skipped: [] };
  const { commit: c } = await git.readCommit({ fs, gitdir, oid: commit });
  const status = (await entries(gitdir, c.tree)).find((e) => e.path === 'status' && e.mode === TREE);
  if (!status) return out;
  for (const dir of await entries(gitdir, status.oid)) {
    if (dir.mode !== TREE || !CLUSTER_DIR.test(dir.path)) continue;
    for (const f of await entries(gitdir, dir.oid)) {
      const path = `status/${dir.path}/${f.path}`;
      if (f.mode !== BLOB || !REPORT_FILE.test(f.path)) continue;
      if (out.files.size >= limits.maxFiles) {
        out.skipped.push({ file: path, reason: `more than ${limits.maxFiles} report files: not read` });
        continue;
      }
      const { blob } = await git.readBlob({ fs, gitdir, oid: f.oid });
      if (blob.byteLength > limits.maxFileBytes) out.skipped.push({ file: path, reason: `${blob.byteLength} bytes, over the ${limits.maxFileBytes}-byte cap for a report` });
      else out.files.set(path, Buffer.from(blob).toString('utf8'));
    }
  }
  return out;
}
