// One-shot Talos calls this process saw accepted, until a status write records them. Talos answers
// an Upgrade or a Reboot before its stage moves (the sequence runs after the reply); when the write
// that follows fails, the next pass would read a node that shows nothing of the call and send it
// again. This closes that window within one process; after a restart the recorded request and the
// node's stage and boot ID decide, as before.
import type { ActionResult, JobAction, OneShotCall } from '../../core/job/index.js';
import type { JobView } from '../../kube/views.js';

export interface AcceptedCalls {
  /** Remembers `action` when it is a one-shot call Talos accepted (an install only with exit code 0). */
  record(job: JobView, action: JobAction, result: ActionResult): void;
  /** The calls remembered for the job's recorded boot. */
  of(job: JobView): readonly OneShotCall[];
  /** The job's status now records what was sent, or the job is gone. */
  forget(job: Pick<JobView, 'uid'>): void;
}

export function createAcceptedCalls(): AcceptedCalls {
  const byJob = new Map<string, { bootId: string | undefined; calls: OneShotCall[] }>();
  return {
    record(job, action, result) {
      const call = oneShot(action, result);
      if (call === undefined) return;
      const bootId = job.status.initialBootID;
      const entry = byJob.get(job.uid);
      if (entry !== undefined && entry.bootId === bootId) entry.calls.push(call);
      else byJob.set(job.uid, { bootId, calls: [call] });
    },
    of(job) {
      const entry = byJob.get(job.uid);
      return entry !== undefined && entry.bootId === job.status.initialBootID ? entry.calls : [];
    },
    forget(job) {
      byJob.delete(job.uid);
    },
  };
}

function oneShot(action: JobAction, result: ActionResult): OneShotCall | undefined {
  if (action.type === 'legacyUpgrade' || action.type === 'reboot' || action.type === 'rollback') return action.type;
  if (action.type === 'install' && result.type === 'installed' && result.exitCode === 0) return 'install';
  return undefined;
}
