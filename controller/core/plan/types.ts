// What the PatchPlan decision sees and decides. Structural types: the reconciler's views fit them.
import type { PatchJobSpecInput } from '../../../schemas/patchjob.js';
import type { PatchPlanSpec, PatchPlanStatus } from '../../../schemas/patchplan.js';
import type { PlanEtcdStatus } from '../../../schemas/etcd.js';
import type { ApiServerFact } from '../kubernetes/skew.js';
import type { CheckFacts } from '../gates/health.js';
import type { HookJobFacts, HookJobRequest } from '../hooks.js';
import type { HookPolicy } from '../hook-policy.js';
import type { AlertFacts } from '../gates/alerts.js';
import type { DetectedNode, NodeInstallerAnnotations } from '../installer.js';
import type { Hop } from '../paths/types.js';

export interface PlanNodeFacts {
  name: string;
  labels: Readonly<Record<string, string>>;
  controlPlane: boolean;
  talosVersion: string | undefined;
  /** The node's kubelet version (a stepwise plan's Kubernetes hop takes the nodes below it). */
  kubeletVersion?: string | undefined;
  /** extensions.talos.dev/schematic: the installer a pre-pull resolves, as the node's job will. */
  schematic?: string | undefined;
  /** The value of the node's hold annotation (holds.ts), as written. */
  hold?: string | undefined;
  /** The node's installer override annotations (core/installer.ts), as written. */
  installerAnnotations?: NodeInstallerAnnotations | undefined;
}

/**
 * A PatchJob's phase as a plan reads it: the steps between Pending and the end (Draining,
 * Upgrading, …) are one Running to it, so a job's step does not wake its plan.
 */
export type PlanJobPhase = 'Pending' | 'Running' | 'Completed' | 'Failed';

export interface PlanJobFacts {
  name: string;
  nodeName: string;
  group: string;
  /** The hop of a stepwise plan the job belongs to (its hop label); undefined for other plans. */
  hop?: number | undefined;
  /** undefined: the job has no status yet. */
  phase: PlanJobPhase | undefined;
  /** epoch ms */
  completionTime: number | undefined;
  /** The job gave its slot back to wait for the control plane (Kubernetes upgrade) and needs a new one. */
  slotReleased?: boolean | undefined;
  /** The job has a postNode hook that has not ended yet (postPlan waits for it). */
  postNodeHookPending?: boolean | undefined;
}

/** The kube-proxy DaemonSet, when the cluster runs one. */
export interface KubeProxyFacts {
  image: string | undefined;
  generation: number;
  observedGeneration: number;
  desired: number;
  updated: number;
  available: number;
}

export interface PlanLeaseFacts {
  name: string;
  resourceVersion: string;
  group: string;
  holderIdentity: string | undefined;
}

export interface PreflightCheck {
  /** CamelCase, e.g. `SelectionNonEmpty`, `TalosCredentials`. */
  name: string;
  passed: boolean;
  message: string;
  /** EtcdHealthy: etcd as it found it, for status.etcd. */
  etcd?: PlanEtcdStatus | undefined;
  /** TalosCredentials: per node, the platform and Secure Boot state a factory installer leaves to the node, for preview. */
  detected?: Readonly<Record<string, DetectedNode>> | undefined;
  /** UpgradePath of a stepwise plan, when it found one: the hops, for status.path. */
  path?: readonly Hop[] | undefined;
  /** UpgradePath: what the support matrix does not know of the releases it read (core/support-matrix.ts matrixGaps); [] when it knows them all. */
  matrixGaps?: readonly string[] | undefined;
}

export interface PlanObservation {
  now: number;
  plan: { name: string; uid: string; generation: number; spec: PatchPlanSpec; status: PatchPlanStatus };
  /** Every node of the cluster (the plan's own selector is applied by the decision). */
  nodes: readonly PlanNodeFacts[];
  /** PatchJobs of this plan. */
  jobs: readonly PlanJobFacts[];
  /** Slot Leases of this plan. */
  leases: readonly PlanLeaseFacts[];
  /** The node this controller runs on (NODE_NAME): scheduled last in its group. */
  ownNode?: string | undefined;
  /** A standby can take over (leader election is on): the own node is then left to it. */
  canHandOver?: boolean | undefined;
  /** How long a failed preflight waits before it runs again (default 1 minute). */
  preflightRetryMs?: number | undefined;
  /** Every kube-apiserver of the cluster with its version (Kubernetes targets). */
  apiServers?: readonly ApiServerFact[] | undefined;
  /** undefined: the cluster has no kube-proxy DaemonSet (kube-proxy disabled). */
  kubeProxy?: KubeProxyFacts | undefined;
  /** What the gates adapter read for each of spec.healthChecks (same order); undefined without checks. */
  healthChecks?: readonly (CheckFacts | undefined)[] | undefined;
  /** The plan's hook Jobs (prePlan, postPlan), from the cache. */
  hookJobs?: readonly HookJobFacts[] | undefined;
  /** The operator's hook allowlists (default: DEFAULT_HOOK_POLICY). */
  hookPolicy?: HookPolicy | undefined;
  /** What the alertmanager adapter last learnt for spec.alertGate; undefined: not asked yet (or no gate). */
  alerts?: AlertFacts | undefined;
  /** The installer pre-pulls this process runs or ran for the plan (spec.prePull); undefined: none. */
  prePulls?: PrePullFacts | undefined;
  /** Facts read from the apiserver in this pass rather than taken from the caches: a deadline verdict on them stands. */
  fresh?: readonly PlanFreshRead[] | undefined;
  /** The confirming read this pass asked for failed: no verdict, the status says why the plan waits. */
  confirmFailure?: { message: string } | undefined;
}

/**
 * Cached facts a plan's deadline verdict may rest on, read again before it is given: `kubeProxy`
 * (a GET of the kube-proxy DaemonSet), `hookJobs` (a GET of each plan hook Job that has not ended),
 * `healthChecks` (a list of the objects of the health check being waited for).
 */
export type PlanFreshRead = 'kubeProxy' | 'hookJobs' | 'healthChecks';

export interface PrePullRequest {
  node: string;
  image: string;
}

/** A pre-pull that ended in this process (the shell's runner reports it back through the work queue). */
export interface PrePullResult {
  node: string;
  image: string;
  /** epoch ms */
  at: number;
  /** Why it failed; undefined: the image is on the node. */
  error?: string | undefined;
}

/** What the shell knows about the plan's pre-pulls: the ones in flight now and those that ended. */
export interface PrePullFacts {
  running: ReadonlySet<string>;
  results: readonly PrePullResult[];
}

export interface NewLease {
  name: string;
  group: string;
  /** The PatchJob that will hold the slot. */
  holderIdentity: string;
}

export interface NewJob {
  name: string;
  labels: Record<string, string>;
  spec: PatchJobSpecInput;
}

/** A node taking a slot: its Lease (the claim, created first), then its PatchJob. */
export interface NewSlot {
  node: string;
  lease: NewLease;
  /** undefined: the job exists (it gave its slot back to wait for the control plane and gets one again). */
  job: NewJob | undefined;
}

export type PlanAction =
  | { type: 'preflight' }
  /**
   * One scheduling round in one pass: the slot Leases of finished jobs in `release` deleted first
   * (their slots are among those filled), then the round's Leases (a slot someone else holds is
   * skipped), then the PatchJob of each Lease this pass created.
   */
  | { type: 'scheduleNodes'; group: string; slots: NewSlot[]; release?: PlanLeaseFacts[] }
  /** PatchJobs of Leases without one (a crash between the two, or a job create that failed). */
  | { type: 'createJobs'; jobs: NewJob[] }
  | { type: 'deleteLeases'; leases: PlanLeaseFacts[] }
  | { type: 'pause' }
  /** Give up leadership so a replica on another node patches this controller's own node. */
  | { type: 'handOver' }
  | { type: 'deleteJobs'; names: string[] }
  /** Ask Alertmanager for the alerts of spec.alertGate (it has no watch API); the next pass decides on the answer. */
  | { type: 'askAlertmanager' }
  /** Sets cluster.proxy.image in a control-plane node's machine config (ApplyConfiguration, no reboot). */
  | { type: 'setKubeProxyImage'; node: string; image: string }
  /** Creates a plan hook Job; one that exists already (our previous life) is success. */
  | { type: 'createHookJob'; job: HookJobRequest }
  /** Starts installer pulls on the next round's nodes in the background: the pass does not wait for them. */
  | { type: 'prePull'; pulls: PrePullRequest[] };

interface PlanEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  note: string;
}

export interface PlanStep {
  action?: PlanAction | undefined;
  status: PatchPlanStatus;
  events: PlanEvent[];
  requeueAfterMs?: number | undefined;
  /**
   * The pass must read these facts fresh and decide again before anything else: a deadline passed
   * on what the caches show. `status` (and nothing else) is written only when that read fails.
   */
  confirm?: readonly PlanFreshRead[] | undefined;
}
