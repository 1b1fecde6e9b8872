// What the auto-update proposer is given: its settings (cluster, base branch, namespace) and the
// ports it reads (informers, releases, template texts, upstream evidence) and writes (plan status,
// proposal branches and pull requests), shared by the proposer and the parts it delegates to.
import type { ReleasesClient } from '../../forge/releases.js';
import type { ForgePort } from '../../forge/port.js';
import type { KubeInformers, KubePort } from '../../kube/port.js';
import type { PlanRef, ProposalRef } from '../../core/notify/index.js';
import type { PreflightDeps } from '../../preflight/run.js';
import type { Clock } from '../../runtime/clock.js';
import type { LogFn } from '../../runtime/log.js';
import type { ReportWriter } from '../report/deps.js';
import type { EvidenceSource } from '../promotion/gate.js';

interface AutoUpdateConfig {
  /** --cluster-name: in branch names, titles and labels. */
  cluster: string;
  /** --git-branch: proposals merge into it. */
  baseBranch: string;
  operatorNamespace: string;
  /** The node this controller runs on (scheduled last in its group in the preview). */
  ownNode?: string | undefined;
  /** First retry after a transient failure, doubling up to checkInterval (default 5 s). */
  retryInitialMs?: number;
}

export interface AutoUpdateDeps {
  config: AutoUpdateConfig;
  informers: Pick<KubeInformers, 'patchPlans' | 'nodes' | 'staticPods'>;
  kube: Pick<KubePort, 'writePlanStatus'>;
  forge: ForgePort;
  writer: ReportWriter;
  /** The releases client (one, so its ETag cache is shared by every template). */
  releases: () => Promise<ReleasesClient>;
  /** The text of a file in the last commit the GitOps loop loaded (undefined: not loaded yet). */
  templateText: (file: string) => string | undefined;
  /** For the read-only preflight in the PR body. */
  preflight: PreflightDeps;
  clock: Clock;
  log: LogFn;
  /** Told about each pull request this loop opens (not a refresh of one already open): notifications. */
  onProposalOpened?: ((template: PlanRef, proposal: ProposalRef) => void) | undefined;
  /** Upstream reports of the loaded commit (autoUpdate.promotion); undefined without --promotion-keys-dir. */
  evidence?: EvidenceSource | undefined;
  /** Web prefix of a file at a commit, for links to upstream reports in proposal bodies. */
  blobUrlBase?: string | undefined;
}
