// The write-back side of `kangal-patch run --git-url ...`: the forge (pull requests, commit
// statuses) and the report writer, made from the flags. The forge comes from --forge: GitHub (or
// GitHub Enterprise, or the lab forge) or Gitea/Forgejo over their REST APIs, or none (branches only).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GiteaForge } from '../../forge/gitea.js';
import { GitHubForge } from '../../forge/github.js';
import { NoForge } from '../../forge/none.js';
import type { ForgePort } from '../../forge/port.js';
import type { KubeInformers, KubePort } from '../../kube/port.js';
import type { Clock } from '../../runtime/clock.js';
import type { Logger } from '../../telemetry/logger.js';
import type { Metrics } from '../../telemetry/metrics.js';
import { logFn } from '../../telemetry/logger.js';
import { reportSigner } from '../promotion/signature.js';
import { startReporter, type Reporter } from './index.js';
import { readTokenFile } from '../source/token.js';
import type { GitConfig } from '../wiring.js';
import { BranchWriter } from '../write/index.js';

export interface WriteBack {
  forge: ForgePort;
  /** The bot-branch writer (shared with the auto-update proposals: it serialises its operations). */
  writer: BranchWriter;
  reporter: Reporter;
  /** Web prefix of a file at a commit (`<prefix>/<commit>/<path>`): links in report and proposal bodies. */
  blobUrlBase: string;
}

/**
 * owner/repo of a forge clone URL (`https://github.com/acme/plans.git`), and the forge's web root:
 * the URL before them (`https://git.example.com/gitea` for a Gitea served under a sub-path).
 */
export function repoOf(gitUrl: string): { origin: string; webRoot: string; owner: string; repo: string } | undefined {
  const url = new URL(gitUrl);
  const parts = url.pathname
    .replace(/\.git$/, '')
    .split('/')
    .filter((p) => p !== '');
  const [owner, repo] = parts.slice(-2);
  const webRoot = `${url.origin}${parts
    .slice(0, -2)
    .map((p) => `/${p}`)
    .join('')}`;
  return owner && repo ? { origin: url.origin, webRoot, owner, repo } : undefined;
}

/** The forge and the report writer; undefined (with the reason logged) when write-back cannot run. */
export function startWriteBack(
  cfg: GitConfig,
  deps: {
    kube: Pick<KubePort, 'annotatePlan'>;
    informers: Pick<KubeInformers, 'patchPlans' | 'patchJobs'>;
    clock: Clock;
    log: Logger;
    metrics: Pick<Metrics, 'forgeRequest'>;
  },
  signal: AbortSignal,
): WriteBack | undefined {
  const log = deps.log.child({ loop: 'report' });
  const tokenFile = cfg.gitWriteTokenFile ?? cfg.gitTokenFile;
  const tokenFlag = cfg.gitWriteTokenFile ? '--git-write-token-file' : '--git-token-file';
  if (tokenFile === undefined) {
    log.warn('no --git-write-token-file or --git-token-file: rollouts are not reported back to Git');
    return undefined;
  }
  const repo = repoOf(cfg.gitUrl);
  if (!repo) {
    log.warn({ url: cfg.gitUrl }, 'the --git-url names no owner/repository: rollouts are not reported back to Git');
    return undefined;
  }
  const token = async (): Promise<string> => (await readTokenFile(tokenFile, tokenFlag)) ?? '';
  const tokenSource = `${tokenFlag} ${tokenFile}`;
  const { forge, blobUrlBase } = forgeFor(cfg, repo, {
    token,
    tokenSource,
    log,
    onResponse: deps.metrics.forgeRequest,
  });
  const cacheDir = join(cfg.gitCacheDir ?? mkdtempSync(join(tmpdir(), 'kangal-report-')), 'report.git');
  const writer = new BranchWriter({ url: cfg.gitUrl, cacheDir, token, tokenSource, author: cfg.gitAuthor });
  const reporter = startReporter(
    {
      config: {
        cluster: cfg.clusterName,
        baseBranch: cfg.gitBranch,
        blobUrlBase,
        minIntervalMs: cfg.reportMinInterval,
        signer: cfg.reportSigningKey && reportSigner(cfg.reportSigningKey, cfg.clusterName),
      },
      patchPlans: deps.informers.patchPlans,
      patchJobs: deps.informers.patchJobs,
      forge,
      writer,
      clock: deps.clock,
      log: logFn(log),
      annotatePlan: async (ctx, plan, key, value) =>
        void deps.informers.patchPlans.observeWrite(await deps.kube.annotatePlan(ctx, plan, { [key]: value })),
    },
    signal,
  );
  log.info(
    {
      forge: forge.kind,
      repository: `${repo.owner}/${repo.repo}`,
      cluster: cfg.clusterName,
      signed: cfg.reportSigningKey !== undefined,
    },
    'rollouts are reported back as pull requests',
  );
  return { forge, writer, reporter, blobUrlBase };
}

/** The forge --forge names, and where report links to plan files point on it. */
function forgeFor(
  cfg: GitConfig,
  repo: NonNullable<ReturnType<typeof repoOf>>,
  w: { token: () => Promise<string>; tokenSource: string; log: Logger; onResponse: (status: number | 'error') => void },
): { forge: ForgePort; blobUrlBase: string } {
  const base = {
    owner: repo.owner,
    repo: repo.repo,
    token: w.token,
    tokenSource: w.tokenSource,
    onResponse: w.onResponse,
  };
  const github = new URL(cfg.gitUrl).hostname === 'github.com';
  const githubBlobs = `${github ? 'https://github.com' : repo.origin}/${repo.owner}/${repo.repo}/blob`;
  if (cfg.forge === 'github') {
    const apiUrl = cfg.forgeApiUrl ?? (github ? 'https://api.github.com' : `${repo.origin}/api/v3`);
    return { forge: new GitHubForge({ ...base, apiUrl, log: logFn(w.log) }), blobUrlBase: githubBlobs };
  }
  if (cfg.forge === 'gitea') {
    return {
      forge: new GiteaForge({ ...base, apiUrl: cfg.forgeApiUrl ?? `${repo.webRoot}/api/v1` }),
      blobUrlBase: `${repo.webRoot}/${repo.owner}/${repo.repo}/src/commit`,
    };
  }
  return { forge: new NoForge(), blobUrlBase: githubBlobs };
}
