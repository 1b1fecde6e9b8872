// What the controller needs from the Kubernetes API, as plain values. controller/kube is the only
// importer of @kubernetes/client-node; reconcilers depend on these interfaces only.
//
// Every method takes an operation context (abort + deadline). Failures are OutcomeError
// (runtime/outcome.ts) with a kind and a CamelCase reason:
//   404 on delete → success (already gone); 404 elsewhere → Stalled `NotFound`
//   409 → Transient `Conflict` (re-read and decide again), or `AlreadyExists` on create
//   422/400 → Stalled `Invalid`; 401/403 → Stalled `Forbidden`
//   429 → Waiting `TooManyRequests` (retryAfterMs from Retry-After when given)
//   5xx, network, timeouts → Transient
import type { OpContext } from '../runtime/context.js';
import type { Informer } from '../runtime/informer.js';
import type { PatchJobSpecInput, PatchJobStatus } from '../../schemas/patchjob.js';
import type { PatchPlanStatus } from '../../schemas/patchplan.js';
import type { HookJobRequest } from '../core/hooks.js';
import type { NodePodWatches } from './node-pods.js';
import type {
  DaemonSetView,
  HookJobView,
  JobView,
  LeaseView,
  NodeView,
  PdbView,
  PlanView,
  PodView,
  SecretView,
  VolumeAttachmentView,
} from './views.js';

/** A PatchPlan as a plans-repository file declares it, applied server-side (gitops-plans.ts). */
export interface PlanApply {
  name: string;
  annotations: Record<string, string>;
  finalizers: string[];
  /** metadata.labels of the file (server-side apply owns them: a label removed from the file is removed). */
  labels?: Readonly<Record<string, string>> | undefined;
  /** The spec as the file wrote it (no defaults filled in). */
  spec: Record<string, unknown>;
}

export type EvictionResult =
  | { outcome: 'evicted' }
  /** The pod no longer exists (or is another pod with the same name now). */
  | { outcome: 'gone' }
  /** A PodDisruptionBudget allows no disruption now (HTTP 429 from the Eviction API). */
  | { outcome: 'blocked'; retryAfterMs: number | undefined };

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid?: string;
  namespace?: string;
}

export interface EventInput {
  regarding: ObjectRef;
  related?: ObjectRef;
  type: 'Normal' | 'Warning';
  /** CamelCase, e.g. `Cordoned`, `DrainBlocked`, `UpgradeRequested`. */
  reason: string;
  /** CamelCase verb, e.g. `Cordon`, `Evict`, `Upgrade`. */
  action: string;
  note: string;
}

export interface SlotLeaseInput {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  holderIdentity: string;
}

export interface PatchJobInput {
  name: string;
  labels: Record<string, string>;
  spec: PatchJobSpecInput;
  /** The owning PatchPlan, for garbage collection. */
  owner?: { name: string; uid: string };
}

export interface KubePort {
  /** Sets spec.unschedulable and the cordoned-by annotation in one patch, guarded by the view's resourceVersion. */
  cordon(ctx: OpContext, node: NodeView, jobName: string): Promise<NodeView>;
  /** Clears both, guarded by the view's resourceVersion; refuses (Stalled `NotCordonedByUs`) a node cordoned by anyone else; writes nothing to a node already schedulable without a marker. */
  uncordon(ctx: OpContext, node: NodeView, jobName: string): Promise<NodeView>;

  /** The Node, read live (not the cache): a deadline verdict is confirmed on it. Undefined when it does not exist. */
  readNode(ctx: OpContext, name: string): Promise<NodeView | undefined>;
  /** Pods bound to the node, read live from the apiserver (not a cache): a drain is done only when this is empty of evictable pods. */
  listPodsOnNode(ctx: OpContext, nodeName: string): Promise<PodView[]>;
  /** Names of the VolumeAttachments naming the node, read live: a VolumeDetachTimeout verdict is confirmed on them. */
  listVolumeAttachments(ctx: OpContext, nodeName: string): Promise<string[]>;
  /** One control-plane component's mirror pods in kube-system (k8s-app=<component>) on every node, read live. */
  listStaticPods(ctx: OpContext, component: string): Promise<PodView[]>;
  /** Eviction API (policy/v1), with the pod's UID as precondition. */
  evictPod(ctx: OpContext, pod: PodView): Promise<EvictionResult>;
  /** Deletes the pod (UID precondition); a missing pod is success. */
  deletePod(ctx: OpContext, pod: PodView): Promise<void>;
  /** Names of the PodDisruptionBudgets in the pod's namespace whose selector matches the pod. */
  matchingPdbs(ctx: OpContext, pod: PodView): Promise<string[]>;

  /** Creates a Lease; an existing one of that name fails with Transient `AlreadyExists`. */
  createSlotLease(ctx: OpContext, lease: SlotLeaseInput): Promise<LeaseView>;
  /** Deletes a Lease (resourceVersion precondition when given); a missing one is success. */
  deleteLease(ctx: OpContext, namespace: string, name: string, resourceVersion?: string): Promise<void>;
  /** A Lease read from the apiserver (the etcd disruption Lease has no informer); undefined when missing. */
  readLease(ctx: OpContext, namespace: string, name: string): Promise<LeaseView | undefined>;

  createPatchJob(ctx: OpContext, job: PatchJobInput): Promise<JobView>;
  /** Creates a hook Job (batch/v1) in `namespace`; an existing one of that name fails with Transient `AlreadyExists`. */
  createHookJob(ctx: OpContext, namespace: string, job: HookJobRequest): Promise<HookJobView>;
  /** A hook Job read live (not the cache): a hook's timeout is confirmed on it. Undefined when it does not exist. */
  readHookJob(ctx: OpContext, namespace: string, name: string): Promise<HookJobView | undefined>;
  /** kube-system/kube-proxy read live (not the cache): a plan's KubeProxyUpgradeTimeout is confirmed on it. Undefined when it does not exist. */
  readKubeProxy(ctx: OpContext): Promise<DaemonSetView | undefined>;
  /**
   * Replaces the job's status with `status` (fields absent in `status` are removed), guarded by
   * job.resourceVersion: a concurrent change fails with Transient `Conflict`. Returns the new view.
   */
  writeJobStatus(ctx: OpContext, job: JobView, status: PatchJobStatus): Promise<JobView>;

  /** Deletes a PatchJob (retention); a missing one is success. */
  deletePatchJob(ctx: OpContext, name: string): Promise<void>;
  /** Replaces the plan's status like writeJobStatus. */
  writePlanStatus(ctx: OpContext, plan: PlanView, status: PatchPlanStatus): Promise<PlanView>;
  /** The Pause failure policy: sets spec.paused, guarded by plan.resourceVersion. */
  pausePlan(ctx: OpContext, plan: PlanView): Promise<PlanView>;
  /** GitOps sync: server-side apply (field manager `kangal-patch`, force) of a plan as its file has it. */
  applyPlan(ctx: OpContext, plan: PlanApply): Promise<PlanView>;
  /** GitOps prune: deletes the plan (UID precondition); a missing one is success. */
  deletePlan(ctx: OpContext, name: string, uid: string): Promise<void>;
  /** Sets (string) or removes (null) annotations of a plan (merge patch). */
  annotatePlan(ctx: OpContext, name: string, annotations: Record<string, string | null>): Promise<PlanView>;
  /** Removes `finalizer` from the plan, guarded by plan.resourceVersion. */
  removePlanFinalizer(ctx: OpContext, plan: PlanView, finalizer: string): Promise<PlanView>;
  /** GET /readyz of the apiserver: true when it answers 200. */
  apiserverReady(ctx: OpContext): Promise<boolean>;

  /** A Secret's data, or undefined when it does not exist. */
  readSecret(
    ctx: OpContext,
    namespace: string,
    name: string,
  ): Promise<Readonly<Record<string, Uint8Array>> | undefined>;
  /**
   * A Secret of the operator namespace (the Talos credentials), undefined when it does not exist:
   * once the informers run, from a watch on that one Secret (no GET per read; a change arrives with
   * a new resourceVersion), else a GET.
   */
  readOperatorSecret(ctx: OpContext, name: string): Promise<SecretView | undefined>;

  /**
   * events.k8s.io/v1 Event, best effort: queued and written in the background (failures are logged
   * by the adapter). The promise settles, never rejects, once the Event is written or dropped;
   * passes do not wait for it, so an Event never adds a round trip to the work it describes.
   */
  emitEvent(ctx: OpContext, event: EventInput): Promise<void>;
}

export interface KubeInformers {
  /** Key: node name. */
  nodes: Informer<NodeView>;
  /** The control plane's static (mirror) pods in kube-system, k8s-app in STATIC_POD_COMPONENTS. Key: `namespace/name`. Index: node name (`byIndex(nodeName)`). */
  staticPods: Informer<PodView> & { byIndex(nodeName: string): PodView[] };
  /** Pods of the hook Jobs (operator namespace, labelled kangalpatch.ozalp.dk/hook). Key: `namespace/name`. Index: the Job's name (`byIndex(jobName)`). */
  hookPods: Informer<PodView> & { byIndex(jobName: string): PodView[] };
  /** The pods of the nodes the job wiring opened (the draining ones): wake-ups only, the drain lists its pods live. */
  nodePods: NodePodWatches;
  /** Leases of the operator namespace labelled with kangalpatch.ozalp.dk/patchplan. Key: name. */
  slotLeases: Informer<LeaseView>;
  /** Key: job name. */
  patchJobs: Informer<JobView>;
  /** Key: plan name. */
  patchPlans: Informer<PlanView>;
  /** PodDisruptionBudgets, key `namespace/name`: a drain blocked by one wakes when it allows disruptions again. */
  pdbs: Informer<PdbView>;
  /** VolumeAttachments, key name. Index: spec.nodeName (`byIndex(nodeName)`). */
  volumeAttachments: Informer<VolumeAttachmentView> & { byIndex(nodeName: string): VolumeAttachmentView[] };
  /** The kube-system/kube-proxy DaemonSet only (key: its name): the Kubernetes upgrade waits on its rollout. */
  kubeProxy: Informer<DaemonSetView>;
  /** Hook Jobs of the operator namespace (labelled kangalpatch.ozalp.dk/hook). Key: name. */
  hookJobs: Informer<HookJobView>;
}
