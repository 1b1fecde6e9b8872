// Small projections of Kubernetes objects: what the controller keeps in memory and passes around,
// never the client's objects. Each view carries the resourceVersion it was projected from.
import type { PatchJobSpec, PatchJobStatus } from '../../schemas/patchjob.js';
import type { PatchPlanSpec, PatchPlanStatus } from '../../schemas/patchplan.js';

/** Annotation on a Node that records which PatchJob cordoned it (we never uncordon a node we did not cordon). */
export const CORDONED_BY_ANNOTATION = 'kangalpatch.ozalp.dk/cordoned-by';
export const SCHEMATIC_ANNOTATION = 'extensions.talos.dev/schematic';
export const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';
export const PLAN_LABEL = 'kangalpatch.ozalp.dk/patchplan';
export const GROUP_LABEL = 'kangalpatch.ozalp.dk/group';
export const NODE_LABEL = 'kangalpatch.ozalp.dk/node';
/** Set by the GitOps sync on a PatchPlan: the commit and file its spec came from. */
export const SOURCE_COMMIT_ANNOTATION = 'kangalpatch.ozalp.dk/source-commit';
export const SOURCE_PATH_ANNOTATION = 'kangalpatch.ozalp.dk/source-path';

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
  /** Optional so hand-built views in tests need not list them; projections always set them. */
  annotations?: Readonly<Record<string, string>>;
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
