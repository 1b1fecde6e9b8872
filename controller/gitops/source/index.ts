// The plans repository as the GitOps loop sees it: the branch head (cheap, every poll) and the plan
// files of a commit (a shallow fetch, then the tree). The only importer of isomorphic-git besides
// the report writer's push path.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PlanSource, Problem } from '../load/index.js';
import { DEFAULT_FETCH_LIMITS, type FetchLimits, type RepoLimits } from '../load/limits.js';
import type { OpContext } from '../../runtime/context.js';
import { CommitRefusedError } from './errors.js';
import { fetchCommit, remoteHead, type Remote } from './remote.js';
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
  /** Caps on one fetch (the pack's bytes: --git-max-fetch-bytes). */
  fetchLimits?: Partial<FetchLimits>;
  maxFileBytes?: number;
  /** Also read the reports under status/ (promotion evidence from other clusters). */
  readReports?: boolean;
}

export interface Snapshot {
  commit: string;
  sources: PlanSource[];
  /** Files refused before parsing (symlinks, submodules, odd names, sizes). */
  problems: Problem[];
  /** False when a folder could not be read: nothing may be pruned from this snapshot. */
  complete: boolean;
  /** The commit breaks a cap of the repository (files, bytes): nothing of it may be applied. */
  refused?: Problem | undefined;
  /** The reports under status/ in the same commit (only with readReports). */
  reports?: ReportTree;
}

export interface GitSource {
  /** The branch head's commit, from the ref advertisement only. */
  head(ctx: OpContext): Promise<string>;
  /** Fetches the branch head shallow and reads its plan files; a pack over a cap throws CommitRefusedError. */
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
  const fetchLimits = { ...DEFAULT_FETCH_LIMITS, ...opts.fetchLimits };
  // The last head refused for its pack: asked for again, it is refused without fetching it again.
  let refused: CommitRefusedError | undefined;
  return {
    head: async (ctx) => remoteHead(ctx, await remote()),
    snapshot: async (ctx) => {
      let fetched;
      try {
        fetched = await fetchCommit(ctx, await remote(), {
          gitdir,
          limits: fetchLimits,
          refused: (head) => (head === refused?.commit ? refused : undefined),
        });
      } catch (err) {
        if (err instanceof CommitRefusedError && err.commit !== undefined) refused = err;
        throw err;
      }
      const { commit, objects } = fetched;
      // One cache per snapshot: isomorphic-git then loads the pack and its index once, not per object.
      const read = { gitdir, commit, objects, cache: {}, maxObjectBytes: fetchLimits.maxObjectBytes };
      const files = await readPlanTree({
        ...read,
        path: opts.path,
        limits: opts.limits,
        maxFileBytes: opts.maxFileBytes,
      });
      return opts.readReports === true
        ? { commit, ...files, reports: await readReportTree(read) }
        : { commit, ...files };
    },
  };
}
