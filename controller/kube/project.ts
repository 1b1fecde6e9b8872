// Raw Kubernetes objects → the small views the controller keeps. Objects arrive two ways: typed
// from list/read calls (client-node turns timestamps into Date) and as plain JSON from watch events
// (timestamps stay strings), so every timestamp goes through epochMs(). Projections never throw on
// odd content: a view with defaults beats an informer that stops.
import type { V1Lease, V1Node, V1NodeStatus, V1OwnerReference, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import type { z } from 'zod';
import { formatPath } from '../../schemas/field-path.js';
import { patchJobSpec, patchJobStatus, type PatchJobStatus } from '../../schemas/patchjob.js';
import {
  CONTROL_PLANE_LABEL,
  CORDONED_BY_ANNOTATION,
  HOLD_ANNOTATION,
  SCHEMATIC_ANNOTATION,
  type JobView,
  type LeaseView,
  type NodeView,
  type PodView,
} from './views.js';

import { INSTALLER_ANNOTATIONS, type NodeInstallerAnnotations } from '../core/installer.js';

const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** Epoch ms of a Date, an RFC 3339 string, or undefined. */
export function epochMs(value: unknown): number | undefined {
  if (value instanceof Date) return Number.isFinite(value.getTime()) ? value.getTime() : undefined;
  if (typeof value === 'string' && value !== '') {
    const ms = Date.parse(value);
    return Number.isFinite(ms) ? ms : undefined;
  }
  return undefined;
}

const TALOS_OS_IMAGE = /^Talos \((v\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\)$/;

/** `Talos (v1.12.3)` → `v1.12.3`; undefined for any other OS image. */
export function talosVersionOf(osImage: string | undefined): string | undefined {
  return osImage === undefined ? undefined : TALOS_OS_IMAGE.exec(osImage.trim())?.[1];
}

export function projectNode(node: V1Node): NodeView {
  const md = node.metadata ?? {};
  const labels = md.labels ?? {};
  const annotations = md.annotations ?? {};
  const status = node.status;
  const ready = hasReadyCondition(status?.conditions);
  const internalIP = internalIPOf(status);
  const info = status?.nodeInfo;
  return {
    name: md.name ?? '',
    uid: md.uid ?? '',
    resourceVersion: md.resourceVersion ?? '',
    labels,
    controlPlane: CONTROL_PLANE_LABEL in labels,
    internalIP,
    ready,
    unschedulable: node.spec?.unschedulable === true,
    cordonedBy: annotations[CORDONED_BY_ANNOTATION],
    ...nodeInfo(info),
    schematic: annotations[SCHEMATIC_ANNOTATION],
    hold: annotations[HOLD_ANNOTATION],
    installerAnnotations: installerAnnotationsOf(annotations),
  };
}

/** The node's InternalIP address, when it reports one. */
function internalIPOf(status: V1NodeStatus | undefined): string | undefined {
  return status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
}

/** The node's installer override annotations, or undefined when it carries none (the common case). */
function installerAnnotationsOf(annotations: Record<string, string>): NodeInstallerAnnotations | undefined {
  const entries = Object.entries(INSTALLER_ANNOTATIONS).flatMap(([field, key]) =>
    annotations[key] === undefined ? [] : [[field, annotations[key]] as const],
  );
  return entries.length === 0 ? undefined : Object.fromEntries(entries);
}

function nodeInfo(info: { bootID?: string; osImage?: string; kubeletVersion?: string } | undefined) {
  return {
    bootID: info?.bootID ?? '',
    talosVersion: talosVersionOf(info?.osImage),
    kubeletVersion: info?.kubeletVersion ?? '',
  };
}

export function projectPod(pod: V1Pod): PodView {
  const md = pod.metadata ?? {};
  return {
    namespace: md.namespace ?? '',
    name: md.name ?? '',
    uid: md.uid ?? '',
    resourceVersion: md.resourceVersion ?? '',
    nodeName: nodeNameOf(pod),
    labels: md.labels ?? {},
    controllerKind: controllerKindOf(md.ownerReferences),
    mirror: MIRROR_ANNOTATION in (md.annotations ?? {}),
    deleting: isDeleting(md),
    phase: pod.status?.phase ?? 'Unknown',
    image: firstImage(pod.spec),
    ready: hasReadyCondition(pod.status?.conditions),
    ...exitCodeOf(pod),
  };
}

/** The node the pod is bound to; undefined while it is not scheduled (an empty name counts as none). */
function nodeNameOf(pod: V1Pod): string | undefined {
  return pod.spec?.nodeName || undefined;
}

/** The terminated exit code of the pod's first terminated container (a failed one first), when there is one. */
function exitCodeOf(pod: V1Pod): { exitCode?: number } {
  const terminated = (pod.status?.containerStatuses ?? [])
    .map((c) => c.state?.terminated)
    .filter((t) => t !== undefined && t !== null);
  const t = terminated.find((x) => x.exitCode !== 0) ?? terminated[0];
  return t === undefined ? {} : { exitCode: t.exitCode };
}

/** A Ready condition with status True (Nodes and Pods alike). */
function hasReadyCondition(conditions: readonly { type: string; status: string }[] | undefined): boolean {
  return (conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** The image of a pod spec's first container (a pod template's too). */
export function firstImage(spec: V1PodSpec | undefined): string | undefined {
  // A malformed object from a watch may lack containers: no image, never a crash.
  return spec?.containers?.[0]?.image;
}

/** The kind of the owner that controls the object (ReplicaSet, DaemonSet, ...). */
function controllerKindOf(owners: readonly V1OwnerReference[] | undefined): string | undefined {
  return (owners ?? []).find((o) => o.controller === true)?.kind;
}

/** A deletionTimestamp is set (JSON from watch events may carry null). */
function isDeleting(md: { deletionTimestamp?: Date | string | null }): boolean {
  return md.deletionTimestamp !== undefined && md.deletionTimestamp !== null;
}

export function projectLease(lease: V1Lease): LeaseView {
  const md = lease.metadata ?? {};
  const spec = lease.spec ?? {};
  return {
    namespace: md.namespace ?? '',
    name: md.name ?? '',
    resourceVersion: md.resourceVersion ?? '',
    labels: md.labels ?? {},
    holderIdentity: spec.holderIdentity || undefined,
    renewTime: epochMs(spec.renewTime) ?? epochMs(spec.acquireTime),
    leaseDurationSeconds: spec.leaseDurationSeconds ?? undefined,
    created: epochMs(md.creationTimestamp) ?? 0,
  };
}

/** A PatchJob or PatchPlan as stored (custom objects come back as plain JSON). */
export interface RawCustomObject {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    creationTimestamp?: string | Date;
    deletionTimestamp?: string | Date | null;
  };
  spec?: unknown;
  status?: unknown;
}
export type RawPatchJob = RawCustomObject;

/** The view of one of our custom objects: spec parsed with its schema (or the reason it does not parse), status leniently. */
export function projectCustomObject<Spec extends z.ZodType, Status extends z.ZodObject>(
  raw: RawCustomObject,
  spec: Spec,
  status: Status,
) {
  const md = raw.metadata ?? {};
  const parsed = spec.safeParse(raw.spec);
  return {
    name: md.name ?? '',
    uid: md.uid ?? '',
    resourceVersion: md.resourceVersion ?? '',
    generation: md.generation ?? 0,
    labels: md.labels ?? {},
    annotations: md.annotations ?? {},
    finalizers: md.finalizers ?? [],
    spec: parsed.success ? parsed.data : undefined,
    specError: parsed.success ? undefined : describeIssues('spec', parsed.error.issues),
    status: lenientStatusOf(status, raw.status),
    created: epochMs(md.creationTimestamp) ?? 0,
    deleting: isDeleting(md),
  };
}

export function projectJob(raw: RawPatchJob): JobView {
  return projectCustomObject(raw, patchJobSpec, patchJobStatus);
}

interface Issue {
  path: PropertyKey[];
  message: string;
  code?: string;
  keys?: string[];
}

/** `spec.target.talosVersion: must be ...; spec: unrecognized key "foo"` */
export function describeIssues(root: string, issues: readonly Issue[]): string {
  return issues.map((iss) => `${formatPath([root, ...iss.path])}: ${iss.message}`).join('; ');
}

/**
 * The status fields that parse, each on its own; a bad or unknown field is dropped rather than
 * losing the whole status (a status written by a newer or older controller must still be read).
 */
function lenientStatusOf<S extends z.ZodObject>(schema: S, raw: unknown): z.output<S> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return {} as z.output<S>;
  const fields = schema.shape as Record<string, z.ZodType>;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    const field = fields[key];
    if (field === undefined) continue;
    if (key === 'conditions') {
      const kept = keepValidConditions(field, value);
      if (kept !== undefined) out[key] = kept;
      continue;
    }
    const r = field.safeParse(value);
    if (r.success && r.data !== undefined) out[key] = r.data;
  }
  // Each field parsed on its own; a whole-object rule could still object, and we must not throw.
  const whole = schema.safeParse(out);
  return (whole.success ? whole.data : out) as z.output<S>;
}

export function lenientStatus(raw: unknown): PatchJobStatus {
  return lenientStatusOf(patchJobStatus, raw);
}

function keepValidConditions(field: z.ZodType, value: unknown): unknown[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return (value as unknown[]).filter((c) => field.safeParse([c]).success);
}
