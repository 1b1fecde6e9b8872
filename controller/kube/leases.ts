// Slot Leases: creating one with a slot-indexed name lets the apiserver arbitrate between replicas
// (the loser gets AlreadyExists).
import { V1MicroTime } from '@kubernetes/client-node';
import type { OpContext } from '../runtime/context.js';
import { isOutcomeError } from '../runtime/outcome.js';
import { kubeCall } from './call.js';
import { FIELD_MANAGER, type KubeClients } from './clients.js';
import type { SlotLeaseInput } from './port.js';
import { projectLease } from './project.js';
import type { LeaseView } from './views.js';

export async function createSlotLease(c: KubeClients, ctx: OpContext, lease: SlotLeaseInput): Promise<LeaseView> {
  const now = new V1MicroTime(ctx.clock.now());
  const body = {
    metadata: { name: lease.name, namespace: lease.namespace, labels: lease.labels },
    spec: { holderIdentity: lease.holderIdentity, acquireTime: now, renewTime: now },
  };
  const out = await kubeCall(ctx, `create Lease ${lease.namespace}/${lease.name}`, (o) =>
    c.coordination.createNamespacedLease({ namespace: lease.namespace, body, fieldManager: FIELD_MANAGER }, o),
  );
  return projectLease(out);
}

/** The Lease to delete; with a resourceVersion, only that version of it (a newer one is a Conflict). */
export interface LeaseDelete {
  namespace: string;
  name: string;
  resourceVersion?: string | undefined;
}

export async function deleteLease(
  c: KubeClients,
  ctx: OpContext,
  { namespace, name, resourceVersion }: LeaseDelete,
): Promise<void> {
  try {
    await kubeCall(ctx, `delete Lease ${namespace}/${name}`, (o) =>
      c.coordination.deleteNamespacedLease(
        { namespace, name, ...(resourceVersion ? { body: { preconditions: { resourceVersion } } } : {}) },
        o,
      ),
    );
  } catch (err) {
    if (isOutcomeError(err) && err.code === 404) return;
    throw err;
  }
}

/** A Lease as the apiserver has it now (not a cache); undefined when it does not exist. */
export async function readLease(
  c: KubeClients,
  ctx: OpContext,
  namespace: string,
  name: string,
): Promise<LeaseView | undefined> {
  try {
    return projectLease(
      await kubeCall(ctx, `read Lease ${namespace}/${name}`, (o) =>
        c.coordination.readNamespacedLease({ namespace, name }, o),
      ),
    );
  } catch (err) {
    if (isOutcomeError(err) && err.code === 404) return undefined;
    throw err;
  }
}
