// Completed and Failed: give the node back (uncordon, only if this job cordoned it, and for a failed
// job only once the node is Ready) and free the concurrency slot. A node left cordoned is always said
// so in status and in an Event; it is uncordoned as soon as it is Ready again.
import { JobReason } from './reasons.js';
import { iso, without } from './status.js';
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
      status: { ...status, nodeLeftCordoned: true, message: `${status.message ?? ''}; ${note}` },
      events: [{ type: 'Warning', reason: JobReason.NodeLeftCordoned, note, onNode: true }],
      requeueAfterMs: 0,
    };
  }
  if (o.leases.length > 0) return { action: { type: 'releaseLeases', leases: [...o.leases] }, status, events: [], requeueAfterMs: undefined };
  return { status, events: [], requeueAfterMs: undefined };
}
