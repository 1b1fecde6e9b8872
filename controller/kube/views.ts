// Small projections of Kubernetes objects: what the controller keeps in memory and passes around,
// never the client's objects. Each view carries the resourceVersion it was projected from.
import type { PatchJobSpec, PatchJobStatus } from '../../schemas/patchjob.js';
import type { PatchPlanSpec, PatchPlanStatus } from '../../schemas/patchplan.js';

/** Annotation on a Node that records which PatchJob cordoned it (we never uncordon a node we did not cordon). */
export const CORDONED_BY_ANNOTATION = 'kangalpatch.ozalp.dk/cordoned-by';
export const SCHEMATIC_ANNOTATION = 'extensions.talos.dev/schematic';
export const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';
// The labels a plan puts on its PatchJobs (and Leases) are the core's: one definition.
export { GROUP_LABEL, PLAN_LABEL } from '../core/plan/jobs.js';
export { HOLD_ANNOTATION } from '../core/plan/holds.js';
import type { NodeInstallerAnnotations } from '../core/installer.js';
/** Talos's control-plane static pods: mirror pods in kube-system labelled k8s-app=<component>. */
export const STATIC_POD_NAMESPACE = 'kube-system';
export const STATIC_POD_LABEL = 'k8s-app';
/** The DaemonSet Talos renders from the control-plane config's cluster.proxy.image. */
export const KUBE_PROXY = { namespace: 'kube-system', name: 'kube-proxy' } as const;

export interface NodeView {
  name: string;
  uid: string;
  resourceVersion: string;
  labels: Readonly<Record<string, string>>;
  controlPlane: boolean;
  /** First InternalIP address, the Talos API target. */
  internalIP: string | undefined;
  /** Ready condition is True. */
  ready: boolean;
  unschedulable: boolean;
  /** Value of the cordoned-by annotation. */
  cordonedBy: string | undefined;
  /** status.nodeInfo.bootID */
  bootID: string;
  /** Talos version parsed from status.nodeInfo.osImage `Talos (vX.Y.Z)`; undefined for other OS images. */
  talosVersion: string | undefined;
  kubeletVersion: string;
  /** extensions.talos.dev/schematic annotation. */
  schematic: string | undefined;
  /** kangalpatch.ozalp.dk/hold annotation, as written (core/plan/holds.ts reads it). */
  hold: string | undefined;
  /** The installer override annotations, as written (core/installer.ts reads them); undefined when the node has none. */
  installerAnnotations: NodeInstallerAnnotations | undefined;
}

export interface PodView {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  nodeName: string | undefined;
  labels: Readonly<Record<string, string>>;
  /** Kind of the controller owner reference (`ReplicaSet`, `DaemonSet`, `StatefulSet`, `Node` for mirror pods, ...). */
  controllerKind: string | undefined;
  /** Has the kubernetes.io/config.mirror annotation (a static pod's mirror). */
  mirror: boolean;
  /** metadata.deletionTimestamp is set. */
  deleting: boolean;
  /** status.phase (`Pending`, `Running`, `Succeeded`, `Failed`, `Unknown`). */
  phase: string;
  /** Image of the first container (a static pod's component image). */
  image: string | undefined;
  /** Ready condition is True. */
  ready: boolean;
  /** Exit code of the first container that terminated (hook Job pods report how they failed). */
  exitCode?: number | undefined;
}

/** A hook Job (batch/v1) in the hooks namespace. */
export interface HookJobView {
  namespace: string;
  name: string;
  resourceVersion: string;
  labels: Readonly<Record<string, string>>;
  ownerUid: string | undefined;
  outcome: 'running' | 'succeeded' | 'failed';
  failedReason: string | undefined;
  startTime: number | undefined;
  completionTime: number | undefined;
}

export interface LeaseView {
  namespace: string;
  name: string;
  resourceVersion: string;
  labels: Readonly<Record<string, string>>;
  holderIdentity: string | undefined;
  /** epoch ms of spec.renewTime (or acquireTime), undefined when unset. */
  renewTime: number | undefined;
  leaseDurationSeconds: number | undefined;
  /** epoch ms of metadata.creationTimestamp. */
  created: number;
}

export interface JobView {
  name: string;
  uid: string;
  resourceVersion: string;
  generation: number;
  labels: Readonly<Record<string, string>>;
  /** Parsed with the zod schema (defaults applied); undefined when the stored spec does not parse. */
  spec: PatchJobSpec | undefined;
  /** The zod message when the spec does not parse. */
  specError: string | undefined;
  status: PatchJobStatus;
  created: number;
  deleting: boolean;
}

export interface PlanView {
  name: string;
  uid: string;
  resourceVersion: string;
  generation: number;
  labels: Readonly<Record<string, string>>;
  /** The GitOps loop's source-commit/spec-commit/source-path/managed-by and the reconcile-now trigger live here. */
  annotations: Readonly<Record<string, string>>;
  finalizers: readonly string[];
  spec: PatchPlanSpec | undefined;
  specError: string | undefined;
  status: PatchPlanStatus;
  created: number;
  deleting: boolean;
}

export interface PdbView {
  namespace: string;
  name: string;
  resourceVersion: string;
  /** status.disruptionsAllowed as the disruption controller last computed it. */
  disruptionsAllowed: number;
}

/** A storage.k8s.io/v1 VolumeAttachment: a CSI volume attached (or being detached) to a node. */
export interface VolumeAttachmentView {
  name: string;
  resourceVersion: string;
  nodeName: string;
  /** The PersistentVolume it attaches, when it names one (inline volumes do not). */
  persistentVolume: string | undefined;
}

/** The kube-proxy DaemonSet (kube-system), as far as the Kubernetes upgrade needs it. */
export interface DaemonSetView {
  namespace: string;
  name: string;
  resourceVersion: string;
  /** Image of the first container of the pod template. */
  image: string | undefined;
  generation: number;
  observedGeneration: number;
  desired: number;
  updated: number;
  available: number;
}

/** A Secret's data, decoded, with the resourceVersion it was read at (a new one on every change). */
export interface SecretView {
  name: string;
  resourceVersion: string;
  data: Readonly<Record<string, Uint8Array>>;
}
