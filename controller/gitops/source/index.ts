// The plans repository as the GitOps loop sees it: the branch head (cheap, every poll) and the plan
// files of a commit (a shallow fetch, then the tree). The only importer of isomorphic-git besides
// the report writer's push path.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PlanSource, Problem } from '../load/index.js';
import type { RepoLimits } from '../load/limits.js';
import type { OpContext } from '../../runtime/context.js';
import { fetchHead, remoteHead, type Remote } from './remote.js';
import { readTokenFile } from './token.js';
import { readReportTree, type ReportTree } from './reports.js';
import { readPlanTree } from './tree.js';

export interface GitSourceOptions {
  url: string;
  branch: string;
  /** Folder of plan files in the repository ('' = root). */
  path: string;
  tokenFile: string | undefined;
  /** Where the shallow clone lives; a fresh temporary directory by default. */
  cacheDir: string | undefined;
  limits?: Partial<RepoLimits>;
  maxFileBytes?: number;
  /** Also read the reports under status/ (promotion evidence from other clusters). */
  readReports?: boolean;
}

export interface Snapshot {
  commit: string;
  sources: PlanSource[];
  /** Files refused before parsing (symlinks, submodules, odd names, caps). */
  problems: Problem[];
  /** False when a cap stopped reading: nothing may be pruned from this snapshot. */
  complete: boolean;
  /** The reports under status/ in the same commit (only with readReports). */
  reports?: ReportTree;
}

export interface GitSource {
  /** The branch head's commit, from the ref advertisement only. */
  head(ctx: OpContext): Promise<string>;
  /** Fetches the branch head shallow and reads its plan files. */
  snapshot(ctx: OpContext): Promise<Snapshot>;
}

export function createGitSource(opts: GitSourceOptions): GitSource {
  const gitdir = join(opts.cacheDir ?? mkdtempSync(join(tmpdir(), 'kangal-git-')), 'plans.git');
  const remote = async (): Promise<Remote> => ({
    url: opts.url,
    branch: opts.branch,
    token: await readTokenFile(opts.tokenFile, '--git-token-file'),
    tokenFile: opts.tokenFile,
  });
  return {
    head: async (ctx) => remoteHead(ctx, await remote()),
    snapshot: async (ctx) => {
      const commit = await fetchHead(ctx, await remote(), gitdir);
      const files = await readPlanTree({ gitdir, commit, path: opts.path, limits: opts.limits, maxFileBytes: opts.maxFileBytes });
      return opts.readReports === true ? { commit, ...files, reports: await readReportTree(gitdir, commit) } : { commit, ...files };
    },
  };
}
