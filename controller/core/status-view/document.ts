// The status document: what `kangal-patch status -o json|yaml` prints, and what the text views are
// drawn from. A stable interface of its own (docs/rollout.md "Watching a rollout" documents it), not the raw
// objects: scripts read these fields, and the CRDs may grow without breaking them. Fields are added,
// never renamed or removed, while `version` stays v1. Times are RFC 3339 (UTC), spans are seconds.

export const STATUS_KIND = 'KangalPatchStatus';
export const STATUS_VERSION = 'v1';

export interface StatusDocument {
  kind: typeof STATUS_KIND;
  version: typeof STATUS_VERSION;
  /** When the document was computed. */
  time: string;
  /** False when the viewer may not list Nodes: node readiness and versions then come from the PatchJobs alone. */
  nodesReadable: boolean;
  plans: PlanEntry[];
}

/** What something waits for: the status's reason and message, and the instant the wait ends or gives up. */
export interface Wait {
  reason?: string;
  message?: string;
  until?: string;
  /** What happens at `until`: `next schedule`, `health check ready gives up`, `Draining gives up`, ... */
  untilWhat?: string;
}

export interface Counts {
  total: number;
  completed: number;
  running: number;
  pending: number;
  failed: number;
  /** Nodes kept back by the kangalpatch.ozalp.dk/hold annotation: the group waits for them. */
  held: number;
  /** Nodes whose hold annotation says skip: done without being patched. */
  skipped: number;
}

export interface GroupEntry extends Counts {
  name: string;
  concurrency?: number;
  /** Concurrency slots held now. */
  active?: number;
}

export interface VersionChange {
  /** What the node ran when its job first read it. */
  before?: string;
  /** What it runs now (or ran when its job ended). */
  after?: string;
  /** What the plan moves it to; absent when the plan leaves this version alone. */
  target?: string;
}

export interface NodeEntry {
  node: string;
  job: string;
  group: string;
  /** The PatchJob's phase (Pending when it has none yet). */
  phase: string;
  finished: boolean;
  wait: Wait;
  /** The PodDisruptionBudget that blocks the drain now. */
  blockingPDB?: string;
  /** The etcd gate's stage while it holds this control-plane node. */
  etcdWait?: string;
  startTime?: string;
  phaseStartTime?: string;
  completionTime?: string;
  secondsInPhase?: number;
  /** Cordoned until uncordoned, or until now while it still is. */
  secondsCordoned?: number;
  /** Start to completion, or to now while the job runs. */
  secondsTotal?: number;
  talos: VersionChange;
  kubernetes: VersionChange;
  /** The Node's Ready condition; absent when Nodes are unreadable or the Node is gone. */
  ready?: boolean;
  /** The node is still cordoned after its job ended (status.nodeLeftCordoned). */
  leftCordoned?: boolean;
}

interface HeldNode {
  node: string;
  reason: string;
}

export interface ChildEntry {
  name: string;
  phase: string;
  talosVersion?: string;
  completed: number;
  total: number;
  failed: number;
}

interface PromotionStage {
  cluster: string;
  state: string;
  eligibleTime?: string;
  message: string;
}

export interface AutoUpdateEntry {
  lastCheckTime?: string;
  nextCheckTime?: string;
  currentVersion?: string;
  latestVersion?: string;
  pendingVersion?: string;
  pendingEligibleTime?: string;
  /** MinReleaseAge or Promotion. */
  pendingHeldBy?: string;
  lastProposedVersion?: string;
  lastProposalURL?: string;
  /** The child plan that holds new proposals back until it completes. */
  blockedBy?: { name: string; version: string; phase?: string };
  /** `reason: message` of the last failed check or proposal. */
  lastError?: string;
  promotion?: { reason: string; version?: string; eligibleTime?: string; stages: PromotionStage[] };
  /** The plans this template proposed (label kangalpatch.ozalp.dk/auto-update-template), newest first. */
  children: ChildEntry[];
}

export interface PlanEntry {
  name: string;
  created: string;
  /** status.phase; Pending before the controller wrote one. */
  phase: string;
  /** Completed, Failed or Cancelled: nothing more happens. */
  finished: boolean;
  paused: boolean;
  /** Who paused it: `spec` (spec.paused) or `failurePolicy` (with its reason in wait). */
  pausedBy?: 'spec' | 'failurePolicy';
  /** An auto-update template (spec.target.autoUpdate.enabled): it proposes plans, it patches nothing. */
  template: boolean;
  /** The template that proposed this plan. */
  proposedBy?: string;
  target: { talosVersion?: string; kubernetesVersion?: string };
  wait: Wait;
  startTime?: string;
  completionTime?: string;
  secondsTotal?: number;
  counts: Counts;
  /** In schedule order (strategy.order). */
  groups: GroupEntry[];
  /** One per PatchJob, by node name. */
  nodes: NodeEntry[];
  /** Named by status.held and status.skipped (the first 50 each; counts has the totals). */
  held: HeldNode[];
  skipped: HeldNode[];
  autoUpdate?: AutoUpdateEntry;
  /** The stored spec does not parse (shown from its status only). */
  specUnreadable?: boolean;
  /** The pull request carrying the plan's rollout report (GitOps write-back only). */
  reportUrl?: string;
}
