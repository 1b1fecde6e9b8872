// What the PatchJob decision sees and what it decides. Structural types only: the reconciler's
// views (controller/kube/views.ts) fit them without copying.
import type { PatchJobSpec, PatchJobStatus } from '../../../schemas/patchjob.js';
import type { RebootMode } from '../../../schemas/patchplan.js';
import type { DetectedNode, NodeInstallerAnnotations } from '../installer.js';
import type { ApiServerFact } from '../kubernetes/skew.js';
import type { HookJobFacts, HookJobRequest } from '../hooks.js';
import type { HookPolicy } from '../hook-policy.js';
import type { Matcher } from '../../../schemas/matchers.js';
import type { EtcdFacts } from '../etcd/index.js';

export interface JobNodeFacts {
  name: string;
  internalIP: string | undefined;
  ready: boolean;
  unschedulable: boolean;
  cordonedBy: string | undefined;
  bootID: string;
  talosVersion: string | undefined;
  schematic: string | undefined;
  controlPlane: boolean;
  kubeletVersion: string;
  /** The node's installer override annotations (core/installer.ts), as written. */
  installerAnnotations?: NodeInstallerAnnotations | undefined;
}

/** A control-plane static pod (its mirror pod in kube-system) on the job's node. */
export interface StaticPodFacts {
  /** `kube-apiserver`, `kube-controller-manager` or `kube-scheduler` (its k8s-app label). */
  component: string;
  image: string | undefined;
  ready: boolean;
  deleting: boolean;
}

export interface JobPodFacts {
  namespace: string;
  name: string;
  uid: string;
  controllerKind: string | undefined;
  mirror: boolean;
  deleting: boolean;
  phase: string;
  labels?: Readonly<Record<string, string>> | undefined;
}

interface JobLeaseFacts {
  name: string;
  resourceVersion: string;
  holderIdentity: string | undefined;
}

/** A failed call, as the reconciler normalised it (adapters classify; nobody reads message text). */
export interface CallFailure {
  /** Worth trying again later (network, node rebooting, conflict). */
  transient: boolean;
  /** CamelCase cause, e.g. `Unavailable`, `FailedPrecondition`, `OperationFailed`, `TlsRejected`. */
  reason: string;
  message: string;
}

/** Talos facts, read only in the phases that need them (`detected`: the platform and Secure Boot a factory installer leaves to the node, in Pending). */
export type TalosFacts =
  | {
      ok: true;
      version: string;
      bootId: string;
      stage: string | undefined;
      schematic: string | undefined;
      detected?: DetectedNode | undefined;
    }
  | { ok: false; failure: CallFailure };

/** Talos facts that were read. */
export type TalosIdentity = Extract<TalosFacts, { ok: true }>;

/** The node's active machine config, read only while a Kubernetes step needs it. */
export type ConfigFacts = { ok: true; config: string } | { ok: false; failure: CallFailure };

export interface JobObservation {
  now: number;
  job: { name: string; spec: PatchJobSpec; status: PatchJobStatus; uid?: string | undefined };
  node: JobNodeFacts | undefined;
  /** Pods bound to the node (live list while draining). */
  pods: readonly JobPodFacts[];
  /** Slot Leases held by this job. */
  leases: readonly JobLeaseFacts[];
  talos: TalosFacts | undefined;
  /** Static pods on the job's node (control-plane nodes), from the cache. */
  staticPods?: readonly StaticPodFacts[] | undefined;
  /** Every kube-apiserver of the cluster with its version: the skew rule for kubelets. */
  apiServers?: readonly ApiServerFact[] | undefined;
  config?: ConfigFacts | undefined;
  /** This job's hook Jobs (hooks namespace), from the cache. */
  hookJobs?: readonly HookJobFacts[] | undefined;
  /** The operator's hook allowlists (default: DEFAULT_HOOK_POLICY). */
  hookPolicy?: HookPolicy | undefined;
  /** Facts read from the apiserver in this pass rather than taken from the caches: a deadline verdict on them stands. */
  fresh?: readonly FreshRead[] | undefined;
  /** A hook's confirming read this pass asked for failed: no verdict, the status says why the hook waits. */
  confirmFailure?: { message: string } | undefined;
  /**
   * One-shot Talos calls this controller process saw accepted on the job's recorded boot while the
   * status write that records them failed. Talos answers before its stage moves (the sequence runs
   * after the reply), so for a moment the node shows nothing of the call: these count as sent.
   */
  acceptedCalls?: readonly OneShotCall[] | undefined;
  /** VolumeAttachments naming the node, by name (read only while a drain with drain.waitForVolumeDetach is on); undefined: not read. */
  volumeAttachments?: readonly string[] | undefined;
  /** etcd as every control-plane node answered it, read only in the passes the gate decides (core/job/etcd.ts etcdNeed). */
  etcd?: EtcdFacts | undefined;
  /** The cluster's etcd disruption Lease, read in the same passes and while this job holds it. */
  etcdLease?: EtcdLeaseRead | undefined;
}

/** The etcd disruption Lease as read: none, or who holds it (and whether that job still runs). */
export type EtcdLeaseRead = (
  | { exists: false }
  | {
      exists: true;
      resourceVersion: string;
      holder: string | undefined;
      holderNode: string | undefined;
      holderActive: boolean;
    }
) & {
  /** Control-plane nodes whose running jobs wait for the turn (gate not passed yet), besides this one, by name; the etcd leader's job lets them go first. */
  othersWaiting?: readonly string[];
};

/** Talos calls that change the node, sent at most once per boot: the legacy Upgrade, a successful install, a Reboot. */
export type OneShotCall = 'legacyUpgrade' | 'install' | 'reboot' | 'rollback';

/**
 * Cached facts a deadline verdict may rest on, read again before it is given: `node` (a GET of the
 * Node), `nodePods` (the node's pods, field-selected: the drain's pods and the static pods),
 * `apiServers` (the cluster's kube-apiserver mirror pods), `hookJobs` (a GET of each of the job's
 * hook Jobs that has not ended).
 */
export type FreshRead = 'node' | 'nodePods' | 'apiServers' | 'hookJobs' | 'volumeAttachments';

type PodRef = Pick<JobPodFacts, 'namespace' | 'name' | 'uid'>;

export type JobAction =
  /** ImageService.Pull; `namespace` as in talosctl (default system: installers, the kubelet; cri: static pods). */
  | { type: 'pull'; image: string; namespace?: 'system' | 'cri' }
  | { type: 'cordon' }
  | { type: 'evict'; pods: PodRef[]; deleteIfBlocked: boolean }
  | { type: 'legacyUpgrade'; image: string; rebootMode: 'default' | 'powercycle' }
  | { type: 'install'; image: string }
  | { type: 'reboot'; mode: RebootMode }
  /** MachineService.Rollback: to the previous bootloader entry, and reboot. */
  | { type: 'rollback' }
  /** ApplyConfiguration NO_REBOOT of the whole config, with one component's image changed. */
  | { type: 'applyConfig'; component: string; image: string; config: string }
  | { type: 'uncordon' }
  | { type: 'releaseLeases'; leases: JobLeaseFacts[] }
  /** Creates a hook Job; one that exists already (our previous life) is success. */
  | { type: 'createHookJob'; job: HookJobRequest }
  /** A silence in Alertmanager; one that carries the tag already is reused, never doubled. */
  | { type: 'createSilence'; silence: SilenceRequest }
  /** Expires the silence (by ID, else the ones carrying the tag); one already gone is success. */
  | { type: 'expireSilence'; tag: string; id?: string }
  /** Creates the etcd disruption Lease held by this job; one that exists fails with AlreadyExists. */
  | { type: 'acquireEtcdLease' }
  /** Deletes the etcd disruption Lease under its resourceVersion; one already gone is success. */
  | { type: 'releaseEtcdLease'; resourceVersion: string }
  /** MachineService.EtcdForfeitLeadership on the job's node (on a member that does not lead: a no-op). */
  | { type: 'forfeitLeadership' };

/** A silence to create: what Alertmanager's API v2 takes, and the tag that finds it again. */
export interface SilenceRequest {
  name: string;
  tag: string;
  matchers: Matcher[];
  endsAt: string;
  createdBy: string;
  comment: string;
}

export type ActionResult =
  | { type: 'done' }
  /** ImageService.Pull ended; `alreadyPresent`: nothing was downloaded (Talos skipped the pull of an image it held, or every layer was there already). */
  | { type: 'pulled'; alreadyPresent: boolean }
  | { type: 'silenced'; tag: string; id: string }
  | { type: 'installed'; exitCode: number; messages: string[] }
  | { type: 'evicted'; evicted: number; deleted: PodRef[]; blocked: { pod: PodRef; pdbs: string[] }[] };

export interface JobEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  note: string;
  /** Also record the event on the Node. */
  onNode?: boolean;
}

export interface JobStep {
  /** At most one action per pass; undefined: only the status write (record first) or nothing. */
  action?: JobAction | undefined;
  /** The status to write (before acting when `action` is undefined, after success otherwise). */
  status: PatchJobStatus;
  events: JobEvent[];
  /** When to look again; undefined: only on watch events. */
  requeueAfterMs?: number | undefined;
  /**
   * The pass must read these facts fresh and decide again before anything else: the deadline passed
   * on what the caches show. `status` (and nothing else) is written only when that read fails.
   */
  confirm?: readonly FreshRead[] | undefined;
}

/** Talos facts a phase needs before deciding. */
export type TalosNeed = 'none' | 'identity' | 'config';
