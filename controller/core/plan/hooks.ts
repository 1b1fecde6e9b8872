// The plan hooks. prePlan runs once, before the first node of the plan is scheduled; its failure
// applies the failure policy (reason HookFailed): Halt fails the plan, Pause pauses it and resuming
// accepts the failure and goes on. postPlan runs once the plan ended (Completed, Failed, Cancelled)
// and nothing of it runs any more; its failure is reported and changes nothing.
import semver from 'semver';
import type { HookName, HookStatus } from '../../../schemas/hooks.js';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import {
  decideHook,
  hookEnv,
  hookJobName,
  hookRecord,
  HOOK_LABEL,
  HookReason,
  withHookRecord,
  type HookInput,
  type HookProgress,
} from '../hooks.js';
import { iso } from '../time.js';
import { isFresh } from './confirm.js';
import { PLAN_LABEL } from './jobs.js';
import type { Selection } from './selection.js';
import { say } from './status.js';
import type { PlanObservation, PlanStep } from './types.js';

function progress(
  o: PlanObservation,
  sel: Selection,
  status: PatchPlanStatus,
  { hook, spec }: Pick<HookInput, 'hook' | 'spec'>,
): HookProgress {
  const plan = o.plan.name;
  const name = hookJobName(plan, hook);
  const selected = new Set(sel.groupOf.keys());
  const versions = o.nodes
    .filter((n) => selected.has(n.name))
    .flatMap((n) => (n.talosVersion && semver.valid(n.talosVersion) ? [n.talosVersion] : []));
  return decideHook({
    hook,
    spec,
    record: hookRecord(status.hooks, hook),
    job: o.hookJobs?.find((j) => j.name === name),
    now: o.now,
    fresh: isFresh(o, 'hookJobs'),
    confirmFailure: o.confirmFailure,
    policy: o.hookPolicy,
    request: {
      name,
      hook,
      spec,
      labels: { [PLAN_LABEL]: plan, [HOOK_LABEL]: hook },
      env: hookEnv({
        hook,
        plan,
        phase: status.phase,
        // The oldest Talos of the plan's nodes: where the rollout starts from.
        fromTalos: versions.sort(semver.compare)[0],
        toTalos: o.plan.spec.target.talosVersion,
        toKubernetes: o.plan.spec.target.kubernetesVersion,
      }),
      owner: { kind: 'PatchPlan', name: plan, uid: o.plan.uid },
    },
  });
}

/** Before the first node: the prePlan step, or undefined once it succeeded (or failed and a resume accepted it). */
export function prePlanHook(o: PlanObservation, sel: Selection, status: PatchPlanStatus): PlanStep | undefined {
  const spec = o.plan.spec.hooks?.prePlan;
  if (!spec || !beforeFirstNode(o)) return undefined;
  const before = hookRecord(status.hooks, 'prePlan');
  // Failed before and no pause holds the plan any more: resuming accepted the failure.
  if (before?.phase === 'Failed') return undefined;
  const p = progress(o, sel, status, { hook: 'prePlan', spec });
  const hooks = withHookRecord(status.hooks, p.record);
  switch (p.state) {
    case 'succeeded':
      if (before?.phase === 'Succeeded') return undefined;
      return {
        status: { ...status, hooks },
        events: [{ type: 'Normal', reason: 'HookSucceeded', note: `prePlan hook Job ${p.record.jobName} succeeded` }],
        requeueAfterMs: 0,
      };
    case 'failed':
      return prePlanFailed(o, { ...status, hooks }, p.message);
    case 'confirming':
      return {
        status: say({ ...status, hooks }, HookReason.ConfirmingHook, `${p.message} before the first node`),
        events: [],
        requeueAfterMs: 0,
        confirm: ['hookJobs'],
      };
    case 'running':
      return hookRunning(
        'prePlan',
        p,
        before,
        say({ ...status, hooks }, HookReason.WaitingForHook, `${p.message} before the first node`, {
          nextScheduleTime: p.record.deadline,
        }),
      );
  }
}

/** Nothing of the plan has reached a node yet: no PatchJob, no slot Lease. */
const beforeFirstNode = (o: PlanObservation): boolean => o.jobs.length === 0 && o.leases.length === 0;

/** A hook's record says it ended (either way). */
const hookEnded = (record: HookStatus | undefined): boolean =>
  record?.phase === 'Succeeded' || record?.phase === 'Failed';

/** A running plan hook writes `status`; its Job is created once (`p.create`), and the pass that first records it says it started. */
function hookRunning(
  hook: HookName,
  p: Extract<HookProgress, { state: 'running' }>,
  before: HookStatus | undefined,
  status: PatchPlanStatus,
): PlanStep {
  return {
    action: p.create && { type: 'createHookJob', job: p.create },
    status,
    events:
      before === undefined
        ? [{ type: 'Normal', reason: 'HookStarted', note: `${hook} hook Job ${p.record.jobName} started` }]
        : [],
    requeueAfterMs: p.requeueAfterMs,
  };
}

function prePlanFailed(o: PlanObservation, status: PatchPlanStatus, message: string): PlanStep {
  const { spec } = o.plan;
  if (spec.failurePolicy.type === 'Halt') {
    const note = `${message}: the Halt policy stopped the plan before its first node`;
    return {
      status: say(
        { ...status, phase: 'Failed', completionTime: status.completionTime ?? iso(o.now) },
        HookReason.HookFailed,
        note,
      ),
      events: [{ type: 'Warning', reason: HookReason.HookFailed, note }],
    };
  }
  const note = `${message}: the Pause failure policy paused the plan before its first node; set spec.paused: false to go on without it`;
  const generation = spec.paused ? o.plan.generation : o.plan.generation + 1;
  const failures = o.jobs.filter((j) => j.phase === 'Failed').length;
  return {
    action: spec.paused ? undefined : { type: 'pause' },
    status: say(
      {
        ...status,
        phase: 'Paused',
        policyPause: { failures, generation, time: iso(o.now), reason: HookReason.HookFailed },
      },
      HookReason.HookFailed,
      note,
    ),
    events: [{ type: 'Warning', reason: HookReason.HookFailed, note }],
    requeueAfterMs: 0,
  };
}

/** After the plan ended and nothing of it runs: the postPlan step, or undefined once it ended (or the plan has none). */
export function postPlanHook(o: PlanObservation, sel: Selection, status: PatchPlanStatus): PlanStep | undefined {
  const spec = o.plan.spec.hooks?.postPlan;
  if (!spec || status.startTime === undefined) return undefined;
  // The last nodes' postNode hooks end first.
  if (o.jobs.some((j) => j.postNodeHookPending)) return { status, events: [] };
  const before = hookRecord(status.hooks, 'postPlan');
  if (hookEnded(before)) return undefined;
  const p = progress(o, sel, status, { hook: 'postPlan', spec });
  const hooks = withHookRecord(status.hooks, p.record);
  switch (p.state) {
    case 'succeeded':
      return {
        status: { ...status, hooks },
        events: [{ type: 'Normal', reason: 'HookSucceeded', note: `postPlan hook Job ${p.record.jobName} succeeded` }],
        requeueAfterMs: 0,
      };
    case 'failed':
      return {
        status: { ...status, hooks },
        events: [
          { type: 'Warning', reason: HookReason.HookFailed, note: `${p.message}; the plan's outcome is unchanged` },
        ],
        requeueAfterMs: 0,
      };
    case 'confirming':
      // The plan's phase, reason and message keep saying how the rollout went: the hook's record says what it waits for.
      return { status: { ...status, hooks }, events: [], requeueAfterMs: 0, confirm: ['hookJobs'] };
    case 'running':
      return hookRunning('postPlan', p, before, { ...status, hooks });
  }
}
