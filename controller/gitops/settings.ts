// The `kangal-patch run` settings the GitOps loop, the report writer and the auto-update proposals
// read. Declared here, not taken from controller/config.ts: that is the composition root's config,
// a floor above gitops, which gitops must not import. RunConfig fits this shape as it is (structural
// typing), so main.ts hands its config over unchanged; a flag whose type drifts fails to compile there.
import type { KeyObject } from 'node:crypto';
import type { BindAddress } from '../telemetry/http.js';
import type { TrustedKeys } from './promotion/signature.js';
import type { GitAuthor } from './write/index.js';

export interface GitopsSettings {
  /** Operator namespace (Talos Secrets and Leases). */
  namespace: string;
  /** This controller's node (patched last in its group); undefined: not known. */
  nodeName?: string | undefined;

  /** The plans repository; undefined: plans come from kubectl only. */
  gitUrl?: string | undefined;
  gitBranch: string;
  gitPath: string;
  /** Milliseconds between asking the remote for the branch head. */
  pollInterval: number;
  gitTokenFile?: string | undefined;
  gitWriteTokenFile?: string | undefined;
  gitMaxFetchBytes: number;
  /** Undefined: a temporary directory. */
  gitCacheDir?: string | undefined;
  gitAuthor: GitAuthor;
  /** Required with gitUrl. */
  clusterName?: string | undefined;

  /** Undefined: no push webhook. */
  webhookBindAddress: BindAddress | undefined;
  webhookSecretFile?: string | undefined;

  forge: 'github' | 'gitea' | 'none';
  /** Undefined: derived from gitUrl. */
  forgeApiUrl?: string | undefined;
  /** Milliseconds between two commits to one rollout report. */
  reportMinInterval: number;
  /** Undefined: reports are not signed. */
  reportSigningKey?: KeyObject | undefined;
  /** Upstream clusters' report keys; undefined: autoUpdate.promotion has no evidence. */
  trustedKeys?: TrustedKeys | undefined;

  releasesApiUrl: string;
  releasesTokenFile?: string | undefined;
}
