// A deadline verdict is never given on a stale cache. A watch can go silent with its connection
// open (a NAT or load balancer that dropped its state: no FIN, no error) and the informer then keeps
// an old Node or old pods for minutes, until the watchdog notices. A job failed on that view fails a
// node for what we did not see (chaos seed 3045: RebootTimeout on a node Ready for ~28 s). So the
// pass that would give such a verdict asks for the facts it rests on to be read again, and the same
// decision runs on what that read returns: one read per verdict, not per pass. The same holds for a
// node missing from the cache: a Node deleted and registered again while the watch was silent is
// gone from the cache until the next re-list, and a job must not fail with NodeNotFound for it.
import { JobReason } from './reasons.js';
import { failed } from './status.js';
import type { CallFailure, FreshRead, JobObservation, JobStep } from './types.js';

const WHAT: Record<FreshRead, string> = {
  node: 'the Node',
  nodePods: 'its pods',
  apiServers: 'the kube-apiserver pods',
  hookJobs: 'its hook Jobs',
  volumeAttachments: 'its VolumeAttachments',
};

/** `verdict` if `needs` were read fresh in this pass, else the step that asks for that read first. */
export function confirmedVerdict(o: JobObservation, verdict: JobStep, needs: readonly FreshRead[]): JobStep {
  const missing = needs.filter((n) => !(o.fresh ?? []).includes(n));
  if (missing.length === 0) return verdict;
  const { spec } = o.job;
  const status = o.job.status;
  const message = `the deadline ${status.deadline ?? ''} passed on the cached view of node ${spec.nodeName} (${verdict.status.reason ?? 'failing'}); reading ${missing.map((n) => WHAT[n]).join(' and ')} from the apiserver before failing it`;
  return {
    status: { ...status, reason: JobReason.ConfirmingNode, message },
    events: [],
    requeueAfterMs: 0,
    confirm: missing,
  };
}

/** NodeNotFound for `o`'s node, given only once the Node was read from the apiserver and was not there. */
export function nodeNotFound(o: JobObservation, status: JobObservation['job']['status'], message: string): JobStep {
  if ((o.fresh ?? []).includes('node')) return failed(status, o.now, { reason: JobReason.NodeNotFound, message });
  const { nodeName } = o.job.spec;
  return {
    status: {
      ...o.job.status,
      reason: JobReason.ConfirmingNode,
      message: `node ${nodeName} is not in the controller's cache; reading it from the apiserver before failing the job (NodeNotFound)`,
    },
    events: [],
    requeueAfterMs: 0,
    confirm: ['node'],
  };
}

/**
 * The confirming read failed (apiserver unreachable): no verdict on what we could not look at. The
 * job keeps its phase and deadline, says what it waits for, and the work queue retries with backoff.
 */
export function confirmFailed(o: JobObservation, step: JobStep, failure: CallFailure): JobStep {
  const { spec } = o.job;
  const message = `the deadline ${o.job.status.deadline ?? ''} passed on the cached view of node ${spec.nodeName}; confirming the node before failing it, but reading it failed (retrying): ${failure.message}`;
  return {
    status: { ...step.status, reason: JobReason.ConfirmingNode, message },
    events: [],
    requeueAfterMs: undefined,
  };
}
