// The PatchJob reconciler: glue. One pass = observe → decideJob(now) → at most one action → one
// status write → events; returns when to look again. A deadline verdict on cached facts is decided
// again on those facts read fresh (core/job/confirm.ts) before anything is done.
import { isDeepStrictEqual } from 'node:util';
import { API_VERSION, Kind } from '../../../schemas/api.js';
import type { PatchJobStatus } from '../../../schemas/patchjob.js';
import {
  afterAction,
  afterFailure,
  confirmFailed,
  decideJob,
  type JobAction,
  type JobStep,
} from '../../core/job/index.js';
import { iso } from '../../core/job/status.js';
import type { KubeInformers, KubePort } from '../../kube/port.js';
import type { JobView, NodeView } from '../../kube/views.js';
import type { OpContext } from '../../runtime/context.js';
import type { PassResult } from '../../runtime/queue.js';
import type { JobPhaseObserver } from '../../telemetry/job-observer.js';
import type { Logger } from '../../telemetry/logger.js';
import type { TalosPort } from '../../talos/port.js';
import type { AlertmanagerPort } from '../../alertmanager/client.js';
import { callFailure } from '../failure.js';
import { OutcomeError, OutcomeKind } from '../../runtime/outcome.js';
import type { JobWithSpec } from './job-with-spec.js';
import { observeFresh, observeJob, type Observed } from './observe.js';
import { perform } from './perform.js';
import { createAcceptedCalls, type AcceptedCalls } from './accepted-calls.js';
import type { TalosConnect } from '../../talos/talos-access.js';
import type { HookPolicy } from '../../core/hook-policy.js';

export interface JobReconcilerDeps {
  kube: KubePort;
  informers: KubeInformers;
  connectTalos: TalosConnect;
  operatorNamespace: string;
  /** Where hook Jobs run (--hooks-namespace), never the operator namespace. */
  hooksNamespace: string;
  /** The operator's hook allowlists (--hook-*); default: DEFAULT_HOOK_POLICY. */
  hookPolicy?: HookPolicy | undefined;
  log: Logger;
  /** Told about every phase change this reconciler writes (metrics, notifications). */
  observer?: JobPhaseObserver;
  /** Alertmanager, for spec.silences (--alertmanager-url). */
  alertmanager?: AlertmanagerPort | undefined;
}

export function createJobReconciler(
  deps: JobReconcilerDeps,
): (key: string, ctx: OpContext) => Promise<PassResult | undefined> {
  const accepted = createAcceptedCalls();
  return async (key, ctx) => {
    const job = deps.informers.patchJobs.get(key);
    if (!job || job.deleting) {
      if (job) accepted.forget(job);
      return undefined;
    }
    if (!job.spec) return invalidSpec(ctx, deps, job);
    const log = deps.log.child({ job: job.name, plan: job.spec.patchPlanRef, node: job.spec.nodeName });
    const talos = lazyTalos(ctx, deps, job as JobWithSpec);
    try {
      return await pass(ctx, { ...deps, accepted }, { job: job as JobWithSpec, log }, talos.get);
    } finally {
      talos.close();
    }
  };
}

/** The job a pass works on, and its logger (job, plan and node on every line). */
interface PassJob {
  job: JobWithSpec;
  log: Logger;
}

/** A deadline verdict to confirm: what the pass observed, and the step decided on it. */
interface Verdict {
  seen: Observed;
  step: JobStep;
}

/** What an Event is about: the job, and its node for the events that are the node's too. */
interface EventSubject {
  job: JobView;
  node: NodeView | undefined;
}

async function pass(
  ctx: OpContext,
  deps: JobReconcilerDeps & { accepted: AcceptedCalls },
  { job, log }: PassJob,
  talos: () => Promise<TalosPort>,
): Promise<PassResult> {
  let seen = await observeJob(ctx, deps, job, talos);
  seen = { ...seen, observed: { ...seen.observed, acceptedCalls: deps.accepted.of(job) } };
  let step: JobStep = decideJob(seen.observed);
  if (step.confirm) {
    const cachedNode = seen.node;
    seen = await confirm(ctx, deps, { job, log }, { seen, step });
    // The Node was missing from the cache but exists: this pass observed nothing else of it (pods,
    // Talos facts), so it decides nothing; the Node cache is re-listed and the queue comes back.
    if (cachedNode === undefined && seen.node !== undefined) {
      throw new OutcomeError({
        kind: OutcomeKind.Transient,
        reason: 'NodeMissingFromCache',
        message: `node ${job.spec.nodeName} exists but was missing from the controller's cache; re-listing Nodes before deciding`,
      });
    }
    step = decideJob(seen.observed);
  }
  const { observed, pods, node } = seen;
  if (step.action) {
    const action: JobAction = step.action;
    try {
      const result = await perform(ctx, deps, { job, node, pods, talos, log }, { ...step, action });
      deps.accepted.record(job, action, result);
      step = afterAction(observed, step, result);
    } catch (err) {
      if (ctx.signal.aborted) throw err; // shutdown or leader loss: the recorded state makes the next pass safe
      const failure = callFailure(err);
      log.warn(
        { action: action.type, reason: failure.reason, transient: failure.transient, err: failure.message },
        'action failed',
      );
      step = afterFailure(observed, action, failure);
    }
  }
  await writeStatus(ctx, deps, { job, log }, step.status);
  deps.accepted.forget(job);
  for (const e of step.events) emit(ctx, deps, { job, node }, e);
  return { requeueAfterMs: step.requeueAfterMs };
}

/** The facts the verdict rests on, read fresh; when that fails, the job says so and the queue backs off (no verdict). */
async function confirm(
  ctx: OpContext,
  deps: JobReconcilerDeps,
  { job, log }: PassJob,
  { seen, step }: Verdict,
): Promise<Observed> {
  try {
    return await observeFresh(ctx, deps, { seen, needs: step.confirm ?? [] }, log);
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    const failure = callFailure(err);
    const reads = (step.confirm ?? []).join(', ');
    log.warn(
      { reads, reason: failure.reason, err: failure.message },
      'could not read fresh facts to confirm a deadline verdict; retrying',
    );
    await writeStatus(ctx, deps, { job, log }, confirmFailed(seen.observed, step, failure).status);
    throw new OutcomeError({
      kind: OutcomeKind.Transient,
      reason: 'ConfirmReadFailed',
      message: `confirming ${reads} of node ${job.spec.nodeName} before a deadline verdict: ${failure.message}`,
      cause: err,
    });
  }
}

async function writeStatus(
  ctx: OpContext,
  deps: JobReconcilerDeps,
  { job, log }: PassJob,
  status: PatchJobStatus,
): Promise<void> {
  const next = { ...status, observedGeneration: job.generation };
  if (isDeepStrictEqual(next, job.status)) return;
  const written = await deps.kube.writeJobStatus(ctx, job, next);
  deps.informers.patchJobs.observeWrite(written);
  if (next.phase !== job.status.phase) deps.observer?.phaseChanged(job.status, next, job);
  if (next.reason !== job.status.reason) deps.observer?.reasonChanged?.(job.status, next, job);
  if (next.phase !== job.status.phase || next.reason !== job.status.reason) {
    log.info(
      { phase: next.phase, reason: next.reason, message: next.message },
      `job ${next.phase ?? ''}${next.reason ? ` (${next.reason})` : ''}`,
    );
  }
}

/** Queued, not awaited: the adapter writes Events in the background (kube/events.ts). */
function emit(
  ctx: OpContext,
  deps: JobReconcilerDeps,
  { job, node }: EventSubject,
  e: JobStep['events'][number],
): void {
  const regarding = { apiVersion: API_VERSION, kind: Kind.PatchJob, name: job.name, uid: job.uid };
  const action = e.reason;
  void deps.kube.emitEvent(ctx, { regarding, type: e.type, reason: e.reason, action, note: e.note });
  if (e.onNode && node) {
    void deps.kube.emitEvent(ctx, {
      regarding: { apiVersion: 'v1', kind: 'Node', name: node.name, uid: node.uid },
      related: regarding,
      type: e.type,
      reason: e.reason,
      action,
      note: e.note,
    });
  }
}

async function invalidSpec(ctx: OpContext, deps: JobReconcilerDeps, job: JobView): Promise<undefined> {
  if (job.status.phase === 'Failed') return undefined;
  const now = ctx.clock.now();
  const status: PatchJobStatus = {
    ...job.status,
    phase: 'Failed',
    reason: 'InvalidSpec',
    message: `spec is invalid: ${job.specError ?? 'unknown'}`,
    completionTime: iso(now),
  };
  deps.informers.patchJobs.observeWrite(await deps.kube.writeJobStatus(ctx, job, status));
  deps.observer?.phaseChanged(job.status, status, job);
  deps.log.warn(
    { job: job.name, phase: status.phase, reason: status.reason, message: status.message },
    'job Failed (InvalidSpec)',
  );
  emit(
    ctx,
    deps,
    { job, node: undefined },
    {
      type: 'Warning',
      reason: 'InvalidSpec',
      note: status.message ?? '',
      onNode: false,
    },
  );
  return undefined;
}

/** One Talos client per pass, made only when the pass needs Talos. */
function lazyTalos(
  ctx: OpContext,
  deps: JobReconcilerDeps,
  job: JobWithSpec,
): { get: () => Promise<TalosPort>; close: () => void } {
  let client: Promise<TalosPort> | undefined;
  return {
    get: () => {
      const node = deps.informers.nodes.get(job.spec.nodeName);
      client ??= deps.connectTalos(ctx, job.spec.talosConfig, node?.internalIP ?? job.spec.nodeName);
      return client;
    },
    close: () => {
      void client?.then(
        (c) => c.close(),
        () => undefined,
      );
    },
  };
}
