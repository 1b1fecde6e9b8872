// Upstream rollout reports as the promotion decision sees them: read from the plans repository's
// status/<cluster>/ files by gitops/promotion, signature already checked there. Pure values.

/** One upstream rollout report (the YAML twin of a report, reduced). Times are epoch ms. */
export interface UpstreamReport {
  /** Repository path of the YAML twin, e.g. status/staging/nodes-v1-12-5.yaml. */
  file: string;
  cluster: string;
  plan: string;
  phase: string | undefined;
  talosVersion: string | undefined;
  kubernetesVersion: string | undefined;
  startTime: number | undefined;
  completionTime: number | undefined;
  nodes: { total: number; completed: number; failed: number };
  /** Sum over nodes of the seconds each was cordoned. */
  cordonedSeconds: number;
  /** Failure message of each failed node (`node: message`). */
  failures: string[];
}

/** A report file that is not evidence, and why (bad signature, unknown key, does not parse, ...). */
export interface RejectedReport {
  file: string;
  reason: string;
}

/** An upstream cluster whose whole evidence is refused (its report index is missing, broken, replayed or does not match its files). */
export interface RefusedCluster {
  cluster: string;
  /** Names the cluster, the file and the sequence. */
  reason: string;
}
