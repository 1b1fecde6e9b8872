// Completed and Failed: give the node back (uncordon, only if this job cordoned it, and for a failed
// job only once the node is Ready) and free the concurrency slot. A node left cordoned is always said
// so in status and in an Event; it is uncordoned as soon as it is Ready again. How far this got is
// the NodeReleased condition: the job's reason and message keep saying how the job ended.
import { ConditionNodeReleased } from '../../../schemas/api.js';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import { setCondition } from '../conditions.js';
import { postNodeHook } from './hooks.js';
import { JobReason } from './reasons.js';
import { expireSilences } from './silences.js';
import { releaseEtcdLease } from './etcd.js';
import { iso, thenRecord, without } from './status.js';
import type { JobObservation, JobStep } from './types.js';

export function decideFinished(o: JobObservation): JobStep {
  const { spec, name } = o.job;
  const status = o.job.status;
  const node = o.node;
  const ours = node !== undefined && node.unschedulable && node.cordonedBy === name;
  if (ours && (status.phase === 'Completed' || node.ready)) {
    return {
      action: { type: 'uncordon' },
      status: { ...without(status, 'nodeLeftCordoned'), uncordonedTime: iso(o.now) },
      events: [{ type: 'Normal', reason: 'Uncordoned', note: `uncordoned node ${spec.nodeName}`, onNode: true }],
      requeueAfterMs: 0,
    };
  }
  if (ours && !status.nodeLeftCordoned) {
    const note = `node ${spec.nodeName} stays cordoned by ${name} because it is not Ready; it is uncordoned once it is Ready again (or uncordon it by hand after checking it)`;
    return {
      status: notReleased({ ...status, nodeLeftCordoned: true }, o.now, JobReason.NodeLeftCordoned, note),
      events: [{ type: 'Warning', reason: JobReason.NodeLeftCordoned, note, onNode: true }],
      requeueAfterMs: 0,
    };
  }
  // postNode runs once the node is given back (or said to stay cordoned), also after a failure.
  const post = postNodeHook(o);
  if (post) return post;
  return releaseSlot(o, ours);
}

/** The node's slot Leases, then the etcd Lease, then the silences go; `staysCordoned`: the node is not given back. */
function releaseSlot(o: JobObservation, staysCordoned: boolean): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  // The slot is freed even while the node stays cordoned: a node that never comes back must not
  // hold up the rest of the group. Released once both are done; the status is written after the
  // Leases are gone (or at once when there are none).
  const next = staysCordoned
    ? status
    : {
        ...status,
        conditions: setCondition(
          status.conditions,
          {
            type: ConditionNodeReleased,
            status: 'True',
            reason: 'Released',
            message: `node ${spec.nodeName} given back and its slot freed`,
          },
          o.now,
        ),
      };
  if (o.leases.length > 0)
    return {
      action: { type: 'releaseLeases', leases: [...o.leases] },
      status: next,
      events: [],
      requeueAfterMs: undefined,
    };
  // A control-plane node that ended between its etcd gate and its member's catch-up frees the next one.
  const etcd = releaseEtcdLease(o, next);
  if (etcd) return etcd;
  // Then the node's alerts speak again (an Alertmanager that is down holds up no slot).
  return (
    expireSilences({ ...o, job: { ...o.job, status: next } }) ?? { status: next, events: [], requeueAfterMs: undefined }
  );
}

/**
 * After the uncordon landed: what follows it, decided on the node as the uncordon left it, goes into
 * the same write when it only records (the plan already reclaimed the slot, no hook or silence left):
 * NodeReleased with uncordonedTime, one write instead of two.
 */
export function afterUncordon(o: JobObservation, step: JobStep): JobStep {
  const node = o.node === undefined ? undefined : { ...o.node, unschedulable: false, cordonedBy: undefined };
  return thenRecord(step, decideFinished({ ...o, node, job: { ...o.job, status: step.status } }));
}

/** NodeReleased=False with why: the node stays cordoned, or giving it back failed and is retried. */
export function notReleased(status: PatchJobStatus, now: number, reason: string, message: string): PatchJobStatus {
  return {
    ...status,
    conditions: setCondition(status.conditions, { type: ConditionNodeReleased, status: 'False', reason, message }, now),
  };
}
