// Running one hook Job, the same way for node hooks (PatchJob) and plan hooks (PatchPlan): record
// the hook in status first (name, deadline), create the Job under its deterministic name (the
// apiserver arbitrates: AlreadyExists is success), then follow it until it completes, fails or its
// deadline passes. Pure: time is an argument, the Job is a projection.
import type { HookName, HookSpec, HookStatus } from '../../schemas/hooks.js';
import {
  DEFAULT_HOOK_POLICY,
  describeViolations,
  hookPodSecurity,
  hookViolations,
  type HookPodSecurity,
  type HookPolicy,
} from './hook-policy.js';
import { shortened } from './names.js';
import { durationMs, epoch, iso } from './time.js';

export const HookReason = {
  WaitingForHook: 'WaitingForHook',
  HookFailed: 'HookFailed',
  HookTimeout: 'HookTimeout',
  /** The operator's allowlists refuse the hook (a ServiceAccount, PriorityClass or image registry): no Job is created. */
  HookRefused: 'HookRefused',
  /** The deadline passed on the cached Job: it is read from the apiserver before HookTimeout is given. */
  ConfirmingHook: 'ConfirmingHook',
} as const;

/** The Job's name: `<owner>-<hook>` in kebab case, hash-shortened to fit a label value (the Job controller labels its pods with it). */
export function hookJobName(owner: string, hook: HookName): string {
  return shortened(`${owner}-${hook.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`, 63);
}

/** What the reconciler saw of a hook Job (and its pods). */
export interface HookJobFacts {
  name: string;
  /** UID of the Job's controller owner: a Job left by an earlier owner of the same name is not ours. */
  ownerUid: string | undefined;
  /** Complete (Succeeded), Failed, or neither yet. */
  outcome: 'running' | 'succeeded' | 'failed';
  /** The Failed condition's reason (BackoffLimitExceeded, DeadlineExceeded, ...). */
  failedReason: string | undefined;
  startTime: number | undefined;
  completionTime: number | undefined;
  /** A failed pod of the Job and its container's exit code, when one terminated. */
  failedPod: { name: string; exitCode: number | undefined } | undefined;
}

/** The Job to create: the adapter turns this into a batch/v1 Job in the hooks namespace. */
export interface HookJobRequest {
  name: string;
  hook: HookName;
  spec: HookSpec;
  labels: Record<string, string>;
  /** KANGAL_* variables set in every container. */
  env: Record<string, string>;
  owner: { kind: 'PatchJob' | 'PatchPlan'; name: string; uid: string };
  /** ServiceAccount, token and restricted securityContext, over anything of the template (hookPodSecurity). */
  pod: HookPodSecurity;
}

/** What the owner's decision knows of the Job before the policy is applied. */
type HookJobBase = Omit<HookJobRequest, 'pod'>;

export interface HookInput {
  hook: HookName;
  spec: HookSpec;
  record: HookStatus | undefined;
  job: HookJobFacts | undefined;
  request: HookJobBase;
  /** The operator's allowlists (default: DEFAULT_HOOK_POLICY, nothing allowed beyond `default`). */
  policy?: HookPolicy | undefined;
  now: number;
  /** `job` was read from the apiserver in this pass, not taken from the cache: a timeout on it stands. */
  fresh?: boolean | undefined;
  /** That read was asked for and failed: no verdict, the record says why the hook waits. */
  confirmFailure?: { message: string } | undefined;
}

export type HookProgress =
  | { state: 'succeeded'; record: HookStatus }
  | { state: 'failed'; record: HookStatus; reason: string; message: string }
  /** Still running (or about to be created): `record` goes into status; `create` is the one action. */
  | {
      state: 'running';
      record: HookStatus;
      create?: HookJobRequest | undefined;
      message: string;
      requeueAfterMs: number | undefined;
    }
  /** The deadline passed on the cached Job: the pass reads it from the apiserver and decides again (`record` is written only if that read fails). */
  | { state: 'confirming'; record: HookStatus; message: string };

export function decideHook(i: HookInput): HookProgress {
  const { hook, record, now } = i;
  if (record === undefined) return start(i);
  if (record.phase === 'Succeeded') return { state: 'succeeded', record };
  if (record.phase === 'Failed')
    return {
      state: 'failed',
      record,
      reason: record.reason ?? HookReason.HookFailed,
      message: record.message ?? `${hook} hook Job ${record.jobName} failed`,
    };
  const ours = ownJob(i);
  if (ours && ours.outcome !== 'running' && !exitCodeDue(ours, now)) return ended(hook, record, ours, now);
  const deadline = epoch(record.deadline) ?? now;
  if (now >= deadline) return timedOut(i, record, ours);
  return stillRunning(i, record, ours, deadline - now);
}

/** No record yet: the hook is recorded (Job name, deadline) before its Job is created, unless the allowlists refuse it. */
function start(i: HookInput): HookProgress {
  const { hook, now } = i;
  const fresh: HookStatus = {
    hook,
    jobName: i.request.name,
    phase: 'Pending',
    requestedTime: iso(now),
    deadline: iso(now + durationMs(i.spec.timeout)),
  };
  return (
    refused(i, fresh) ?? {
      state: 'running',
      record: fresh,
      message: `starting the ${hook} hook (Job ${fresh.jobName})`,
      requeueAfterMs: 0,
    }
  );
}

/** The Job seen under the hook's name, when it is ours: one an earlier owner of the same name left (another UID) is not. */
function ownJob(i: HookInput): HookJobFacts | undefined {
  return i.job !== undefined && (i.job.ownerUid === undefined || i.job.ownerUid === i.request.owner.uid)
    ? i.job
    : undefined;
}

/** The hook failed without a Job (HookRefused) when the operator's allowlists refuse it; undefined when they admit it. */
function refused(i: HookInput, record: HookStatus): HookProgress | undefined {
  const violations = hookViolations(i.hook, i.spec, i.policy ?? DEFAULT_HOOK_POLICY);
  if (violations.length === 0) return undefined;
  const message = `${i.hook} hook refused, no Job was created: ${describeViolations(violations)}`;
  const next: HookStatus = {
    ...record,
    phase: 'Failed',
    completionTime: iso(i.now),
    reason: HookReason.HookRefused,
    message,
  };
  return { state: 'failed', record: next, reason: HookReason.HookRefused, message };
}

/** HookTimeout, given only on a Job read fresh: a watch silent on a half-open connection can hide a Job that ended in time. */
function timedOut(i: HookInput, record: HookStatus, ours: HookJobFacts | undefined): HookProgress {
  if (i.fresh !== true) return confirming(i, record);
  const message = `${i.hook} hook Job ${record.jobName} did not finish within its timeout ${i.spec.timeout}${ours ? '' : ' (the Job was never seen)'}`;
  return {
    state: 'failed',
    record: { ...record, phase: 'Failed', completionTime: iso(i.now), reason: HookReason.HookTimeout, message },
    reason: HookReason.HookTimeout,
    message,
  };
}

function confirming(i: HookInput, record: HookStatus): HookProgress {
  const why = `the deadline ${record.deadline} of the ${i.hook} hook passed on the controller's cached view of Job ${record.jobName}; reading it from the apiserver before failing the hook (HookTimeout)`;
  const message =
    i.confirmFailure === undefined ? why : `${why}, but the read failed (retrying): ${i.confirmFailure.message}`;
  return { state: 'confirming', record: { ...record, message }, message };
}

/** How long a failed Job waits for its failed pod to show in the pod cache (its own watch) with the exit code. */
const EXIT_CODE_GRACE_MS = 5_000;

/** The Job failed on its pods but the failed pod has not been seen yet: its exit code is a moment away. */
function exitCodeDue(job: HookJobFacts, now: number): boolean {
  return (
    job.outcome === 'failed' &&
    job.failedReason === 'BackoffLimitExceeded' &&
    job.failedPod === undefined &&
    now < (job.completionTime ?? now) + EXIT_CODE_GRACE_MS
  );
}

/** The Job completed or failed: the record says how, with the failed pod's exit code. */
function ended(hook: HookName, record: HookStatus, job: HookJobFacts, now: number): HookProgress {
  if (job.outcome === 'succeeded') return { state: 'succeeded', record: finished(record, job, now, 'Succeeded') };
  const code = job.failedPod?.exitCode;
  const how =
    job.failedPod === undefined
      ? ` (${job.failedReason ?? 'Failed'})`
      : `: pod ${job.failedPod.name} ${code === undefined ? 'failed' : `exited with code ${code}`}${job.failedReason ? ` (${job.failedReason})` : ''}`;
  const message = `${hook} hook Job ${record.jobName} failed${how}`;
  const next = {
    ...finished(record, job, now, 'Failed'),
    reason: HookReason.HookFailed,
    message,
    ...(code === undefined ? {} : { exitCode: code }),
  };
  return { state: 'failed', record: next, reason: HookReason.HookFailed, message };
}

/** Before the deadline: create the Job once (the record says whether we did), then wait for the watch. */
function stillRunning(
  i: HookInput,
  record: HookStatus,
  ours: HookJobFacts | undefined,
  untilDeadlineMs: number,
): HookProgress {
  let waitMs = untilDeadlineMs;
  const waiting = `waiting until ${record.deadline} for the ${i.hook} hook Job ${record.jobName}`;
  if (ours) {
    if (exitCodeDue(ours, i.now))
      waitMs = Math.min(waitMs, (ours.completionTime ?? i.now) + EXIT_CODE_GRACE_MS - i.now);
    const running = {
      ...record,
      phase: 'Running' as const,
      ...(ours.startTime === undefined ? {} : { startTime: iso(ours.startTime) }),
    };
    return { state: 'running', record: running, message: waiting, requeueAfterMs: waitMs };
  }
  if (i.job !== undefined) {
    // A Job of that name left by an earlier owner (a retried PatchJob): it goes with its owner.
    return {
      state: 'running',
      record,
      message: `${waiting}: a Job ${record.jobName} of an earlier owner is still being deleted`,
      requeueAfterMs: Math.min(waitMs, 5_000),
    };
  }
  if (record.createdTime === undefined) {
    // The policy again before the Job exists: the operator may have narrowed it since the hook was recorded.
    const policy = i.policy ?? DEFAULT_HOOK_POLICY;
    const create: HookJobRequest = { ...i.request, pod: hookPodSecurity(i.spec, policy) };
    return (
      refused(i, record) ?? {
        state: 'running',
        record: { ...record, createdTime: iso(i.now) },
        create,
        message: waiting,
        requeueAfterMs: waitMs,
      }
    );
  }
  return { state: 'running', record, message: waiting, requeueAfterMs: waitMs };
}

function finished(record: HookStatus, job: HookJobFacts, now: number, phase: 'Succeeded' | 'Failed'): HookStatus {
  // A message left by a confirming read that failed says nothing about how the hook ended.
  const { message: _, ...rest } = record;
  const next: HookStatus = { ...rest, phase, completionTime: iso(job.completionTime ?? now) };
  if (job.startTime !== undefined) next.startTime = iso(job.startTime);
  return next;
}

/** The hook Jobs a hook's timeout would rest on: those of the hooks that have not ended. */
export function unfinishedHookJobs(records: readonly HookStatus[] | undefined): string[] {
  return (records ?? []).filter((r) => r.phase !== 'Succeeded' && r.phase !== 'Failed').map((r) => r.jobName);
}

/** `records` with `record` in place of the one for the same hook. */
export function withHookRecord(records: readonly HookStatus[] | undefined, record: HookStatus): HookStatus[] {
  return [...(records ?? []).filter((r) => r.hook !== record.hook), record];
}

export function hookRecord(records: readonly HookStatus[] | undefined, hook: HookName): HookStatus | undefined {
  return records?.find((r) => r.hook === hook);
}

/** The KANGAL_* variables of a hook: which hook, plan, node, versions and phase. */
export function hookEnv(v: {
  hook: HookName;
  plan: string;
  node?: string | undefined;
  patchJob?: string | undefined;
  phase: string | undefined;
  fromTalos?: string | undefined;
  toTalos?: string | undefined;
  fromKubernetes?: string | undefined;
  toKubernetes?: string | undefined;
}): Record<string, string> {
  return {
    KANGAL_HOOK: v.hook,
    KANGAL_PLAN: v.plan,
    KANGAL_NODE: v.node ?? '',
    KANGAL_PATCHJOB: v.patchJob ?? '',
    KANGAL_PHASE: v.phase ?? '',
    KANGAL_FROM_TALOS_VERSION: v.fromTalos ?? '',
    KANGAL_TO_TALOS_VERSION: v.toTalos ?? '',
    KANGAL_FROM_KUBERNETES_VERSION: v.fromKubernetes ?? '',
    KANGAL_TO_KUBERNETES_VERSION: v.toKubernetes ?? '',
  };
}

export const HOOK_LABEL = 'kangalpatch.ozalp.dk/hook';
export const PATCHJOB_LABEL = 'kangalpatch.ozalp.dk/patchjob';
