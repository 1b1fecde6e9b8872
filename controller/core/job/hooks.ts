// The node hooks of a PatchJob. preNode runs before the node is cordoned: while it runs nothing
// touches the node, and its failure fails the job with the node untouched. postNode runs once the
// job finished (Completed or Failed, after the uncordon): its failure is reported in status (the
// PostNodeHook condition and the hook's record) and an Event, and undoes nothing.
import type { HookName, HookSpec, HookStatus } from '../../../schemas/hooks.js';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import { setCondition } from '../conditions.js';
import {
  decideHook,
  hookEnv,
  hookJobName,
  hookRecord,
  HOOK_LABEL,
  HookReason,
  PATCHJOB_LABEL,
  withHookRecord,
  type HookProgress,
} from '../hooks.js';
import { GROUP_LABEL, NODE_LABEL, PLAN_LABEL } from '../plan/jobs.js';
import { failed } from './status.js';
import type { JobObservation, JobStep } from './types.js';

/** Condition on a PatchJob with a postNode hook: True once it succeeded, False (with why) when it failed or still runs. */
const ConditionPostNodeHook = 'PostNodeHook';

function progress(o: JobObservation, hook: HookName, spec: HookSpec): HookProgress {
  const { spec: jobSpec, name } = o.job;
  const status = o.job.status;
  const jobName = hookJobName(name, hook);
  return decideHook({
    hook,
    spec,
    record: hookRecord(status.hooks, hook),
    job: o.hookJobs?.find((j) => j.name === jobName),
    now: o.now,
    fresh: (o.fresh ?? []).includes('hookJobs'),
    confirmFailure: o.confirmFailure,
    policy: o.hookPolicy,
    request: {
      name: jobName,
      hook,
      spec,
      labels: {
        [PLAN_LABEL]: jobSpec.patchPlanRef,
        [GROUP_LABEL]: jobSpec.group,
        [NODE_LABEL]: jobSpec.nodeName,
        [PATCHJOB_LABEL]: name,
        [HOOK_LABEL]: hook,
      },
      env: hookEnv({
        hook,
        plan: jobSpec.patchPlanRef,
        node: jobSpec.nodeName,
        patchJob: name,
        phase: status.phase,
        fromTalos: status.initialTalosVersion ?? o.node?.talosVersion,
        toTalos: jobSpec.target.talosVersion,
        fromKubernetes: status.initialKubernetesVersion ?? o.node?.kubeletVersion,
        toKubernetes: jobSpec.target.kubernetesVersion,
      }),
      owner: { kind: 'PatchJob', name, uid: o.job.uid ?? '' },
    },
  });
}

/** A preNode hook was started and has not succeeded: the pass needs no Talos facts, only the hook. */
export function preNodeInFlight(status: PatchJobStatus): boolean {
  const r = hookRecord(status.hooks, 'preNode');
  return r !== undefined && r.phase !== 'Succeeded';
}

/**
 * The preNode hook's step, or undefined once it succeeded (or the job has none): the caller goes on
 * to cordon. `status` is the job's status as the caller would write it.
 */
export function preNodeHook(o: JobObservation, status: PatchJobStatus = o.job.status): JobStep | undefined {
  const spec = o.job.spec.hooks?.preNode;
  if (!spec) return undefined;
  const p = progress(o, 'preNode', spec);
  const before = hookRecord(status.hooks, 'preNode');
  const hooks = withHookRecord(status.hooks, p.record);
  const node = o.job.spec.nodeName;
  switch (p.state) {
    case 'succeeded':
      if (before?.phase === 'Succeeded') return undefined;
      return {
        status: { ...status, hooks },
        events: [
          {
            type: 'Normal',
            reason: 'HookSucceeded',
            note: `preNode hook Job ${p.record.jobName} succeeded for node ${node}`,
          },
        ],
        requeueAfterMs: 0,
      };
    case 'failed':
      return failed({ ...status, hooks }, o.now, {
        reason: HookReason.HookFailed,
        message: `${p.message}; node ${node} was not cordoned or changed`,
      });
    case 'confirming':
      return {
        status: { ...status, hooks, reason: HookReason.ConfirmingHook, message: p.message },
        events: [],
        requeueAfterMs: 0,
        confirm: ['hookJobs'],
      };
    case 'running':
      return {
        action: p.create && { type: 'createHookJob', job: p.create },
        status: {
          ...status,
          hooks,
          reason: HookReason.WaitingForHook,
          message: `${p.message} before cordoning node ${node}`,
        },
        events:
          before === undefined
            ? [
                {
                  type: 'Normal',
                  reason: 'HookStarted',
                  note: `preNode hook Job ${p.record.jobName} started for node ${node}`,
                },
              ]
            : [],
        requeueAfterMs: p.requeueAfterMs,
      };
  }
}

/** The hook ended and status already records that end: nothing is left to write or say. */
function endAlreadyRecorded(before: HookStatus | undefined, p: HookProgress): boolean {
  return before !== undefined && before.phase === p.record.phase && (p.state === 'succeeded' || p.state === 'failed');
}

/**
 * The postNode hook's step on a finished job, or undefined once it has ended (or the job has none).
 * The job's phase, reason and message keep saying how the upgrade went.
 */
export function postNodeHook(o: JobObservation): JobStep | undefined {
  const spec = o.job.spec.hooks?.postNode;
  if (!spec) return undefined;
  const status = o.job.status;
  const p = progress(o, 'postNode', spec);
  const before = hookRecord(status.hooks, 'postNode');
  if (endAlreadyRecorded(before, p)) return undefined;
  const hooks = withHookRecord(status.hooks, p.record);
  const node = o.job.spec.nodeName;
  switch (p.state) {
    case 'succeeded': {
      const conditions = setCondition(
        status.conditions,
        {
          type: ConditionPostNodeHook,
          status: 'True',
          reason: 'HookSucceeded',
          message: `postNode hook Job ${p.record.jobName} succeeded`,
        },
        o.now,
      );
      return {
        status: { ...status, hooks, conditions },
        events: [
          {
            type: 'Normal',
            reason: 'HookSucceeded',
            note: `postNode hook Job ${p.record.jobName} succeeded for node ${node}`,
          },
        ],
        requeueAfterMs: 0,
      };
    }
    case 'failed': {
      const message = `${p.message}; the upgrade of node ${node} is not undone`;
      const conditions = setCondition(
        status.conditions,
        { type: ConditionPostNodeHook, status: 'False', reason: p.reason, message },
        o.now,
      );
      return {
        status: { ...status, hooks, conditions },
        events: [{ type: 'Warning', reason: HookReason.HookFailed, note: message, onNode: true }],
        requeueAfterMs: 0,
      };
    }
    case 'confirming': {
      // The job's phase, reason and message keep saying how the upgrade went: the condition says what the hook waits for.
      const conditions = setCondition(
        status.conditions,
        { type: ConditionPostNodeHook, status: 'False', reason: HookReason.ConfirmingHook, message: p.message },
        o.now,
      );
      return { status: { ...status, hooks, conditions }, events: [], requeueAfterMs: 0, confirm: ['hookJobs'] };
    }
    case 'running': {
      const conditions = setCondition(
        status.conditions,
        { type: ConditionPostNodeHook, status: 'False', reason: HookReason.WaitingForHook, message: p.message },
        o.now,
      );
      return {
        action: p.create && { type: 'createHookJob', job: p.create },
        status: { ...status, hooks, conditions },
        events:
          before === undefined
            ? [
                {
                  type: 'Normal',
                  reason: 'HookStarted',
                  note: `postNode hook Job ${p.record.jobName} started for node ${node}`,
                },
              ]
            : [],
        requeueAfterMs: p.requeueAfterMs,
      };
    }
  }
}
