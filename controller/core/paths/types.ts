// What the upgrade-path planner is given and what it answers (plan-path.ts). Plain version strings
// only, so the planner sits just above the support matrix and needs neither the releases feed nor
// the registry: the caller turns those into lists of versions.

/** One node as it runs now. */
export interface PathNode {
  name: string;
  /** Carried for the messages; a Kubernetes step moves the control plane and every kubelet alike. */
  controlPlane: boolean;
  /** "v1.11.3". */
  talosVersion: string;
  /** The node's kubelet, "v1.30.4". */
  kubernetesVersion: string;
}

/** Where the path ends. An absent version is kept (Kubernetes moves only as far as Talos needs it). */
export interface PathDestination {
  talosVersion?: string | undefined;
  kubernetesVersion?: string | undefined;
}

export interface PathInput {
  nodes: readonly PathNode[];
  destination: PathDestination;
  /** Talos releases that may be used (stable tags from the releases feed or the registry). */
  talosReleases: readonly string[];
  /**
   * Kubernetes versions that may be used. Without it a Kubernetes step uses the destination's
   * version, or for any other minor the support matrix's default Kubernetes version of that minor.
   */
  kubernetesVersions?: readonly string[] | undefined;
}

export interface Hop {
  kind: 'talos' | 'kubernetes';
  /** The version every node below it moves to; nodes at or beyond it are not touched by the hop. */
  to: string;
  /** One sentence for a reviewer: why this hop, and why here. */
  reason: string;
}

export type PathResult = { ok: true; hops: Hop[] } | { ok: false; reason: string };
