// The PatchJob decision: a pure function of the observed node, pods, leases, Talos facts, the job's
// status and the time. One pass: observe → decideJob → at most one action → afterAction or
// afterFailure → one status write.
import { UpgradeFlow } from '../talos-flow.js';
import { confirmFailed as nodeConfirmFailed } from './confirm.js';
import { decideDraining, afterEviction } from './draining.js';
import { afterUncordon, decideFinished, notReleased } from './finished.js';
import { decideUpgradingKubernetes, needsConfig } from './kubernetes.js';
import { afterInstallerPull, decidePending, drainingEntry } from './pending.js';
import { preNodeInFlight } from './hooks.js';
import { afterSilenced, expireFailed, SilenceReason } from './silences.js';
import { decideRebooting } from './rebooting.js';
import { decideRollingBack } from './rolling-back.js';
import { JobReason } from './reasons.js';
import { failed, growingRetry, pastDeadline, waiting, without } from './status.js';
import type { ActionResult, CallFailure, JobAction, JobObservation, JobStep, TalosNeed } from './types.js';
import { afterUpgradeCall, decideUpgrading } from './upgrading.js';
import { decideValidatingKubernetes } from './validating.js';
import { etcdActionFailed, isEtcdAction } from './etcd.js';

export * from './types.js';
export { ETCD_LEASE_LABEL, ETCD_LEASE_NAME, etcdApplies, etcdNeed } from './etcd.js';

export function isFinished(phase: string | undefined): boolean {
  return phase === 'Completed' || phase === 'Failed';
}

/** Which Talos facts the next pass needs: the API is called only for jobs that are acting on a node. */
/** `now`: the pass's time (a deadline verdict that may roll the node back reads Talos); omitted, no time-dependent read. */
export function talosNeed(job: Pick<JobObservation['job'], 'spec' | 'status'>, now?: number): TalosNeed {
  const { status } = job;
  if (needsConfig(status)) return 'config';
  switch (status.phase) {
    case undefined:
      // The first pass of a Talos upgrade reads the node too: its identity is recorded with the start.
      return job.spec.target.talosVersion === undefined ? 'none' : 'identity';
    case 'Pending':
      return preNodeInFlight(status) ? 'none' : 'identity';
    case 'Upgrading':
      return status.upgradeRequestedTime !== undefined ? 'identity' : 'none';
    case 'Rebooting':
      return rebootingNeed(job, now);
    case 'RollingBack':
      return status.rollback?.acknowledgedTime === undefined ? 'identity' : 'none';
    default:
      return 'none';
  }
}

function rebootingNeed(
  { spec, status }: Pick<JobObservation['job'], 'spec' | 'status'>,
  now: number | undefined,
): TalosNeed {
  if (
    status.flow === UpgradeFlow.Lifecycle &&
    status.rebootRequestedTime !== undefined &&
    status.rebootAcknowledgedTime === undefined
  )
    return 'identity';
  // The rollback decision rests on what Talos says the node runs: read at the deadline only.
  return spec.rollback.onFailure && now !== undefined && pastDeadline(status, now) ? 'identity' : 'none';
}

/** Whether the pass needs a fresh list of the node's pods (not the cache): only while draining. */
export function needsPods(status: JobObservation['job']['status']): boolean {
  return status.phase === 'Draining';
}

export function decideJob(o: JobObservation): JobStep {
  switch (o.job.status.phase) {
    case undefined:
    case 'Pending':
      return decidePending(o);
    case 'Draining':
      return decideDraining(o);
    case 'Upgrading':
      return decideUpgrading(o);
    case 'Rebooting':
      return decideRebooting(o);
    case 'RollingBack':
      return decideRollingBack(o);
    case 'UpgradingKubernetes':
      return decideUpgradingKubernetes(o);
    case 'ValidatingKubernetes':
      return decideValidatingKubernetes(o);
    case 'Completed':
    case 'Failed':
      return decideFinished(o);
  }
}

/**
 * The confirming read `step` asked for failed: no verdict on what could not be looked at; the status
 * says what the job waits for and the work queue retries with backoff.
 */
export function confirmFailed(o: JobObservation, step: JobStep, failure: CallFailure): JobStep {
  // A hook's own step says so (a finished job keeps its phase and reason; its hook record tells).
  if (step.confirm?.includes('hookJobs'))
    return { ...decideJob({ ...o, confirmFailure: failure }), requeueAfterMs: undefined };
  return nodeConfirmFailed(o, step, failure);
}

/** The step after `action` succeeded with `result`. */
export function afterAction(o: JobObservation, step: JobStep, result: ActionResult): JobStep {
  if (result.type === 'evicted') return afterEviction(o, result);
  if (result.type === 'silenced') return afterSilenced(o, result.tag, result.id);
  const acted = step.action?.type;
  if (acted === 'legacyUpgrade' || acted === 'install') return afterUpgradeCall(o, result);
  if (result.type === 'pulled' && acted === 'pull' && o.job.status.phase === 'Pending')
    return afterInstallerPull(step, result.alreadyPresent);
  if (acted === 'uncordon' && isFinished(o.job.status.phase)) return afterUncordon(o, step);
  return step;
}

/** The step after `action` failed: transient failures wait and retry (the phase deadline still applies), others end the job. */
export function afterFailure(o: JobObservation, action: JobAction, failure: CallFailure): JobStep {
  const status = o.job.status;
  if (action.type === 'createHookJob') return hookCreateFailed(o, action.job.name, failure);
  if (action.type === 'expireSilence') return expireFailed(o, action.tag, failure);
  if (action.type === 'uncordon' || action.type === 'releaseLeases' || action.type === 'cordon')
    return nodeWriteFailed(o, action.type, failure);
  if (action.type === 'pull' && status.phase === 'UpgradingKubernetes') return prePullFailed(o, action.image, failure);
  if (action.type === 'createSilence') return silenceFailed(o, action.silence.name, failure);
  if (isEtcdAction(action)) return etcdActionFailed(o, action, failure);
  return nodeCallFailed(o, action, failure);
}

/** The actions on the node (Talos calls, the eviction) whose failures the phase's deadline bounds. */
type NodeCallAction = Extract<
  JobAction,
  { type: 'pull' | 'evict' | 'legacyUpgrade' | 'install' | 'reboot' | 'rollback' | 'applyConfig' }
>;

/** A call on the node failed: transient failures (and FailedPrecondition) retry until the deadline, others end the job. */
function nodeCallFailed(o: JobObservation, action: NodeCallAction, failure: CallFailure): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const what = `${action.type} on node ${spec.nodeName}`;
  if (failure.transient || failure.reason === 'FailedPrecondition') {
    if (pastDeadline(status, o.now))
      return failed(status, o.now, {
        reason: timeoutReason(status.phase),
        message: `${what} kept failing until the deadline: ${failure.message}`,
      });
    return waiting(
      status,
      o.now,
      {
        reason: status.reason ?? JobReason.TalosUnreachable,
        message: `${what} failed, retrying until ${status.deadline}: ${failure.message}`,
      },
      growingRetry(status, o.now, 500, 5_000),
    );
  }
  const reason = {
    pull: JobReason.PullFailed,
    legacyUpgrade: JobReason.UpgradeFailed,
    install: JobReason.InstallFailed,
    evict: JobReason.DrainTimeout,
    reboot: JobReason.TalosCallFailed,
    rollback: JobReason.RollbackFailed,
    applyConfig: JobReason.ApplyConfigRejected,
  }[action.type];
  if (action.type === 'applyConfig') {
    return failed(without(status, 'kubernetesStep'), o.now, {
      reason,
      message: `ApplyConfiguration of ${action.component} ${action.image} on node ${spec.nodeName} was rejected: ${failure.message}; the machine config is unchanged`,
    });
  }
  return failed(status, o.now, { reason, message: `${what} failed: ${failure.message}` });
}

/**
 * Giving the node back must eventually happen; the cordon is retried until the drain deadline (a
 * cordon that was to begin Draining enters it anyway, so that deadline bounds its retries). A
 * finished job's message says how it ended, so its housekeeping goes to NodeReleased.
 */
function nodeWriteFailed(
  o: JobObservation,
  action: 'cordon' | 'uncordon' | 'releaseLeases',
  failure: CallFailure,
): JobStep {
  const status = action === 'cordon' && o.job.status.phase === 'Pending' ? drainingEntry(o) : o.job.status;
  const note = `${action} on node ${o.job.spec.nodeName} failed (retrying): ${failure.message}`;
  const next = isFinished(status.phase) ? notReleased(status, o.now, 'Retrying', note) : { ...status, message: note };
  return { status: next, events: [], requeueAfterMs: failure.transient ? growingRetry(status, o.now) : 30_000 };
}

/**
 * A Kubernetes image pre-pull failed. Nothing on the node changed yet: a refused image fails the
 * job; a node without ImageService (Unimplemented) skips pre-pulling; a transient error retries.
 */
function prePullFailed(o: JobObservation, image: string, failure: CallFailure): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  if (failure.reason === 'Unimplemented') {
    const note = `node ${spec.nodeName} cannot pre-pull (no ImageService): Talos pulls ${image} when its machine config changes`;
    return {
      status: { ...status, kubernetesPrePulled: [...(status.kubernetesPrePulled ?? []), image], message: note },
      events: [],
      requeueAfterMs: 0,
    };
  }
  if (failure.transient && !pastDeadline(status, o.now)) {
    return waiting(
      status,
      o.now,
      {
        reason: JobReason.PullingImages,
        message: `pre-pulling ${image} on node ${spec.nodeName} failed, retrying until ${status.deadline}: ${failure.message}`,
      },
      growingRetry(status, o.now, 500, 5_000),
    );
  }
  return failed(status, o.now, {
    reason: JobReason.ImagePullFailed,
    message: `pre-pulling ${image} on node ${spec.nodeName} failed: ${failure.message}; nothing was changed on the node. Check that the image exists and that the node can reach its registry (or a mirror in machine.registries)`,
  });
}

/** Creating a hook Job failed: the record goes back to "not created" and the next pass tries again until the hook's deadline. */
function hookCreateFailed(o: JobObservation, name: string, failure: CallFailure): JobStep {
  const status = o.job.status;
  const note = `creating hook Job ${name} failed (retrying until the hook's deadline): ${failure.message}`;
  return {
    status: { ...status, message: isFinished(status.phase) ? status.message : note },
    events: failure.transient ? [] : [{ type: 'Warning', reason: 'HookJobNotCreated', note }],
    requeueAfterMs: failure.transient ? growingRetry(status, o.now) : 30_000,
  };
}

/** Nothing was done to the node yet: an unreachable Alertmanager is waited for until the Pending deadline, a refusal fails the job. */
function silenceFailed(o: JobObservation, name: string, failure: CallFailure): JobStep {
  const { spec } = o.job;
  const status = o.job.status;
  const what = `creating silence ${name} for node ${spec.nodeName} in Alertmanager failed`;
  if (failure.transient && !pastDeadline(status, o.now)) {
    return waiting(
      status,
      o.now,
      {
        reason: SilenceReason.SilencingAlerts,
        message: `${what}, retrying until ${status.deadline}: ${failure.message}`,
      },
      growingRetry(status, o.now, 500, 5_000),
    );
  }
  return failed(status, o.now, {
    reason: SilenceReason.SilenceFailed,
    message: `${what}: ${failure.message}; the node was not cordoned`,
  });
}

function timeoutReason(phase: string | undefined): string {
  if (phase === 'Draining') return JobReason.DrainTimeout;
  if (phase === 'Rebooting') return JobReason.RebootTimeout;
  if (phase === 'Upgrading') return JobReason.UpgradeTimeout;
  if (phase === 'UpgradingKubernetes' || phase === 'ValidatingKubernetes') return JobReason.KubernetesUpgradeTimeout;
  return JobReason.TalosUnreachable;
}
