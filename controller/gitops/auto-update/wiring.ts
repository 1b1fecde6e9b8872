// Starts the auto-update proposals for `kangal-patch run --git-url ...` while leading, from the
// flags (--releases-api-url, --releases-token-file) and the write-back's forge and branch writer.
import { releasesClientWithTokenFile } from '../../forge/releases.js';
import type { KubeInformers, KubePort } from '../../kube/port.js';
import type { PreflightDeps } from '../../preflight/run.js';
import type { Clock } from '../../runtime/clock.js';
import { logFn, type Logger } from '../../telemetry/logger.js';
import type { WriteBack } from '../report/wiring.js';
import type { GitopsLoop } from '../loop.js';
import type { GitConfig } from '../wiring.js';
import { upstreamEvidence } from '../promotion/reports.js';
import type { EvidenceSource } from '../promotion/gate.js';
import type { ReportTree } from '../source/reports.js';
import type { AutoUpdateDeps } from './deps.js';
import { startAutoUpdate, type AutoUpdater } from './proposer.js';

export interface AutoUpdateWiring {
  kube: KubePort;
  informers: Pick<KubeInformers, 'patchPlans' | 'nodes' | 'staticPods'>;
  writeBack: WriteBack;
  preflight: PreflightDeps;
  templateText: (file: string) => string | undefined;
  /** The report files of the commit the GitOps loop loaded last (promotion evidence). */
  reportFiles: () => { commit: string; tree: ReportTree } | undefined;
  clock: Clock;
  log: Logger;
  onProposalOpened?: AutoUpdateDeps['onProposalOpened'];
}

/** undefined (with the reason logged) when proposals cannot be read back from the forge. */
export function startAutoUpdateProposals(
  cfg: GitConfig,
  w: AutoUpdateWiring,
  signal: AbortSignal,
): AutoUpdater | undefined {
  const log = w.log.child({ loop: 'auto-update' });
  if (w.writeBack.forge.kind === 'none') {
    log.warn(
      '--forge none: auto-update templates make no proposals (skipped versions are read back from pull requests)',
    );
    return undefined;
  }
  const releases = releasesClientWithTokenFile({ baseUrl: cfg.releasesApiUrl, tokenFile: cfg.releasesTokenFile });
  const updater = startAutoUpdate(
    {
      config: {
        cluster: cfg.clusterName,
        baseBranch: cfg.gitBranch,
        operatorNamespace: cfg.namespace,
        ownNode: cfg.nodeName,
      },
      informers: w.informers,
      kube: w.kube,
      forge: w.writeBack.forge,
      writer: w.writeBack.writer,
      releases,
      templateText: w.templateText,
      preflight: w.preflight,
      clock: w.clock,
      log: logFn(log),
      onProposalOpened: w.onProposalOpened,
      evidence: evidenceSource(cfg, w.reportFiles),
      blobUrlBase: w.writeBack.blobUrlBase,
    },
    signal,
  );
  log.info(
    { releases: cfg.releasesApiUrl, cluster: cfg.clusterName },
    'auto-update templates propose new Talos releases as pull requests',
  );
  return updater;
}

/** Verified upstream reports from the loaded commit; undefined without --promotion-keys-dir. */
function evidenceSource(cfg: GitConfig, reportFiles: AutoUpdateWiring['reportFiles']): EvidenceSource | undefined {
  const keys = cfg.trustedKeys;
  if (!keys) return undefined;
  return (clusters, seen) => {
    const files = reportFiles();
    return files && upstreamEvidence(files, keys, clusters, seen);
  };
}

/**
 * After every sync, templates with autoUpdate.promotion re-read the upstream reports of the new commit.
 * Once the GitOps loop has synced its first commit, both the cluster and Git are known: the open
 * proposals of a template that neither has (deleted while no leader ran) are closed.
 */
export function sweepAfterFirstSync(loop: GitopsLoop, updater: AutoUpdater): void {
  let swept = false;
  loop.onSynced((report) => {
    updater.evidenceChanged();
    if (swept) return;
    swept = true;
    updater.sweep(report.plans.map((p) => p.name));
  });
}
