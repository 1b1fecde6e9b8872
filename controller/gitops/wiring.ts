// Starts the GitOps loop (and its webhook) for `kangal-patch run --git-url ...`, while leading.
import type { Server } from 'node:http';
import type { ForgePort } from '../forge/port.js';
import type { KubeInformers, KubePort } from '../kube/port.js';
import type { Clock } from '../runtime/clock.js';
import type { Logger } from '../telemetry/logger.js';
import type { Metrics } from '../telemetry/metrics.js';
import { GitopsLoop } from './loop.js';
import type { GitopsSettings } from './settings.js';
import { createGitSource } from './source/index.js';
import { serveWebhook } from './webhook.js';

export interface GitopsWiring {
  kube: KubePort;
  informers: Pick<KubeInformers, 'patchPlans'>;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  /** The report writer's forge, for commit statuses on the loaded commit; undefined: none. */
  forge?: ForgePort;
}

/** Settings with a plans repository and the cluster's name: what the Git side needs to start. */
export type GitConfig = GitopsSettings & { gitUrl: string; clusterName: string };

export function hasGit(cfg: GitopsSettings): cfg is GitConfig {
  return cfg.gitUrl !== undefined && cfg.clusterName !== undefined;
}

/** Runs until `signal` aborts; resolves once the loop and the webhook have stopped. */
export async function runGitops(
  cfg: GitConfig,
  w: GitopsWiring,
  signal: AbortSignal,
  started?: (loop: GitopsLoop) => void,
): Promise<void> {
  const log = w.log.child({ loop: 'gitops' });
  const source = createGitSource({
    url: cfg.gitUrl,
    branch: cfg.gitBranch,
    path: cfg.gitPath,
    tokenFile: cfg.gitTokenFile,
    cacheDir: cfg.gitCacheDir,
    fetchLimits: { maxFetchBytes: cfg.gitMaxFetchBytes },
    readReports: cfg.trustedKeys !== undefined,
  });
  const loop = new GitopsLoop({
    source,
    kube: w.kube,
    informers: w.informers,
    operatorNamespace: cfg.namespace,
    clock: w.clock,
    log,
    metrics: w.metrics,
    pollIntervalMs: cfg.pollInterval,
    random: Math.random,
    commitStatus: w.forge ? { forge: w.forge, context: `kangal-patch/${cfg.clusterName}` } : undefined,
  });
  started?.(loop);
  let webhook: Server | undefined;
  if (cfg.webhookBindAddress && cfg.webhookSecretFile) {
    const h = await serveWebhook({
      bind: cfg.webhookBindAddress,
      secretFile: cfg.webhookSecretFile,
      branch: cfg.gitBranch,
      onPush: () => loop.trigger('webhook push'),
      log: (msg, fields) => log.warn(fields ?? {}, msg),
    });
    webhook = h.server;
    log.info({ port: h.port, address: cfg.webhookBindAddress.host }, 'webhook listening');
  }
  log.info(
    {
      url: cfg.gitUrl,
      branch: cfg.gitBranch,
      path: cfg.gitPath,
      pollIntervalMs: cfg.pollInterval,
      cluster: cfg.clusterName,
    },
    'GitOps loop started',
  );
  try {
    await loop.run(signal);
  } finally {
    const s = webhook;
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}
