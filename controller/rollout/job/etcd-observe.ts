// What the etcd gate of a control-plane node's job reads, only in the passes it decides
// (core/job/etcd.ts etcdNeed): etcd from every control-plane node (a handful of calls, each under
// the Talos client's etcd deadline), and the etcd disruption Lease from the apiserver with whether
// its holder still runs (from the PatchJob cache).
import {
  etcdApplies,
  etcdNeed,
  isFinished,
  ETCD_LEASE_NAME,
  type EtcdLeaseRead,
  type JobObservation,
} from '../../core/job/index.js';
import type { KubeInformers, KubePort } from '../../kube/port.js';
import type { NodeView } from '../../kube/views.js';
import type { OpContext } from '../../runtime/context.js';
import type { TalosPort } from '../../talos/port.js';
import { controlPlaneNodes, readEtcdFacts } from '../../talos/etcd-facts.js';
import type { JobWithSpec } from './job-with-spec.js';

export interface EtcdObserveDeps {
  kube: KubePort;
  informers: KubeInformers;
  operatorNamespace: string;
}

/** The job, its node (undefined when the cache has none), and its Talos client, made on first use. */
export interface EtcdObserveInput {
  job: JobWithSpec;
  node: NodeView | undefined;
  talos: () => Promise<TalosPort>;
}

export async function observeEtcd(
  ctx: OpContext,
  deps: EtcdObserveDeps,
  { job, node, talos }: EtcdObserveInput,
): Promise<Pick<JobObservation, 'etcd' | 'etcdLease'>> {
  const need = etcdNeed(job, node);
  const [etcd, etcdLease] = await Promise.all([
    need.facts ? readEtcdFacts(ctx, await talos(), controlPlaneNodes(deps.informers.nodes.list())) : undefined,
    need.lease ? readEtcdLease(ctx, deps, job) : undefined,
  ]);
  return { ...(etcd ? { etcd } : {}), ...(etcdLease ? { etcdLease } : {}) };
}

async function readEtcdLease(ctx: OpContext, deps: EtcdObserveDeps, self: JobWithSpec): Promise<EtcdLeaseRead> {
  const lease = await deps.kube.readLease(ctx, deps.operatorNamespace, ETCD_LEASE_NAME);
  const othersWaiting = waitingForTurn(deps.informers, self.name);
  if (!lease) return { exists: false, othersWaiting };
  const holder = lease.holderIdentity;
  const job = holder === undefined ? undefined : deps.informers.patchJobs.get(holder);
  return {
    exists: true,
    resourceVersion: lease.resourceVersion,
    holder,
    holderNode: job?.spec?.nodeName,
    holderActive: job !== undefined && !job.deleting && !isFinished(job.status.phase),
    othersWaiting,
  };
}

/** Control-plane nodes whose running jobs upgrade Talos and have not passed the gate yet, besides `self` (from the PatchJob cache). */
function waitingForTurn(informers: KubeInformers, self: string): string[] {
  return informers.patchJobs
    .list()
    .filter(
      (j) =>
        j.name !== self && !j.deleting && !isFinished(j.status.phase) && j.status.etcd?.gatePassedTime === undefined,
    )
    .flatMap((j) =>
      j.spec !== undefined && etcdApplies({ spec: j.spec, status: j.status }, informers.nodes.get(j.spec.nodeName))
        ? [j.spec.nodeName]
        : [],
    )
    .sort();
}
