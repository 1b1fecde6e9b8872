// The leader-election Lease (coordination.k8s.io/v1) behind runtime/leader.ts's LeaderLeaseStore.
// Writes are full replaces carrying the resourceVersion we read, so two candidates cannot both win.
import { V1MicroTime, type V1Lease } from '@kubernetes/client-node';
import type { OpContext } from '../runtime/context.js';
import type { LeaderLeaseStore, LeaderRecord, LeaderWrite } from '../runtime/leader.js';
import { isOutcomeError } from '../runtime/outcome.js';
import { kubeCall } from './call.js';
import { FIELD_MANAGER, type KubeClients } from './clients.js';
import { epochMs } from './project.js';

export function leaderLeaseStore(c: KubeClients, namespace: string, name: string): LeaderLeaseStore {
  const what = `Lease ${namespace}/${name}`;
  const body = (record: LeaderWrite, resourceVersion?: string): V1Lease => ({
    metadata: { name, namespace, ...(resourceVersion ? { resourceVersion } : {}) },
    spec: {
      // An empty holderIdentity is how client-go releases a lease; keep that for interoperability.
      holderIdentity: record.holderIdentity ?? '',
      ...(record.leaseDurationSeconds !== undefined ? { leaseDurationSeconds: record.leaseDurationSeconds } : {}),
      ...(record.acquireTime !== undefined ? { acquireTime: new V1MicroTime(record.acquireTime) } : {}),
      ...(record.renewTime !== undefined ? { renewTime: new V1MicroTime(record.renewTime) } : {}),
      leaseTransitions: record.leaseTransitions,
    },
  });
  return {
    async get(ctx: OpContext): Promise<LeaderRecord | undefined> {
      try {
        return toRecord(
          await kubeCall(ctx, `read ${what}`, (o) => c.coordination.readNamespacedLease({ name, namespace }, o)),
        );
      } catch (err) {
        if (isOutcomeError(err) && err.code === 404) return undefined;
        throw err;
      }
    },
    async create(ctx, record) {
      return toRecord(
        await kubeCall(ctx, `create ${what}`, (o) =>
          c.coordination.createNamespacedLease({ namespace, body: body(record), fieldManager: FIELD_MANAGER }, o),
        ),
      );
    },
    async update(ctx, resourceVersion, record) {
      return toRecord(
        await kubeCall(ctx, `update ${what}`, (o) =>
          c.coordination.replaceNamespacedLease(
            { name, namespace, body: body(record, resourceVersion), fieldManager: FIELD_MANAGER },
            o,
          ),
        ),
      );
    },
  };
}

function toRecord(lease: V1Lease): LeaderRecord {
  const spec = lease.spec ?? {};
  return {
    holderIdentity: spec.holderIdentity || undefined,
    leaseDurationSeconds: spec.leaseDurationSeconds,
    // Typed as Date, but client-node leaves MicroTime fields as strings: epochMs takes both.
    acquireTime: epochMs(spec.acquireTime),
    renewTime: epochMs(spec.renewTime),
    leaseTransitions: spec.leaseTransitions ?? 0,
    resourceVersion: lease.metadata?.resourceVersion ?? '',
  };
}
