// The demo's watched objects as the product's status view reads them (controller/core/status-view:
// the renderer of `kangal-patch status`): specs and statuses through the zod schemas, as the
// product's kube adapter projects them, so the demo draws its live view and its summary with the
// product's own renderer instead of a copy of it.
import type { KubernetesObject, V1Node } from '@kubernetes/client-node';
import type { z } from 'zod';
import { patchJobSpec, patchJobStatus } from '../../schemas/patchjob.js';
import { patchPlanSpec, patchPlanStatus } from '../../schemas/patchplan.js';
import type { StatusJobInput, StatusNodeInput, StatusPlanInput } from '../../controller/core/status-view/index.js';

export type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

/** The parsed value, or undefined when it does not parse (the view then shows what it can). */
function parsed<S extends z.ZodType>(schema: S, value: unknown): z.output<S> | undefined {
  const r = schema.safeParse(value ?? {});
  return r.success ? r.data : undefined;
}

// A Date once client-node deserialized it, the API's string otherwise: both parse.
const created = (o: KubernetesObject): number => new Date(o.metadata?.creationTimestamp ?? 0).getTime();

export function planInput(o: Obj): StatusPlanInput {
  return {
    name: o.metadata?.name ?? '',
    created: created(o),
    labels: o.metadata?.labels ?? {},
    annotations: o.metadata?.annotations ?? {},
    spec: parsed(patchPlanSpec, o.spec),
    // A status that does not parse (a newer controller's field) is still shown as it is.
    status: parsed(patchPlanStatus, o.status) ?? o.status ?? {},
  };
}

export function jobInput(o: Obj): StatusJobInput {
  return {
    name: o.metadata?.name ?? '',
    labels: o.metadata?.labels ?? {},
    spec: parsed(patchJobSpec, o.spec),
    status: parsed(patchJobStatus, o.status) ?? o.status ?? {},
  };
}

/** Talos's version from the OS image: `Talos (v1.12.4)` → v1.12.4. */
export const talosVersionOf = (osImage: string | undefined): string | undefined =>
  /\((v[^)]+)\)/.exec(osImage ?? '')?.[1];

/** Talos's version from the OS image, the kubelet's, Ready, cordoned. */
export function nodeInput(n: V1Node): StatusNodeInput {
  const info = n.status?.nodeInfo;
  return {
    name: n.metadata?.name ?? '',
    talosVersion: talosVersionOf(info?.osImage),
    kubeletVersion: info?.kubeletVersion ?? '',
    ready: (n.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
    unschedulable: n.spec?.unschedulable === true,
  };
}
