// The PatchPlan reconciler: glue. One pass = observe (caches) → decidePlan(now) → at most one
// action (run preflight, schedule a round: its Leases then their PatchJobs, free Leases, pause,
// purge history) → one status write → events.
import { isDeepStrictEqual } from 'node:util';
import { Annotation, API_VERSION, Kind, PLAN_FINALIZER } from '../../../schemas/api.js';
import { formatPath } from '../../../schemas/field-path.js';
import { withSourceStatus } from '../../core/gitops/source-status.js';
import { decideDeletion } from '../../core/plan/deletion.js';
import type { PatchPlanStatus } from '../../../schemas/patchplan.js';
import { afterPreflight, decidePlan, nodesScheduled } from '../../core/plan/decide.js';
import { selectNodes } from '../../core/plan/selection.js';
import type { NewJob, NewLease, PlanAction, PlanLeaseFacts, PlanObservation, PlanStep } from '../../core/plan/types.js';
import type { KubeInformers, KubePort } from '../../kube/port.js';
import { GROUP_LABEL, PLAN_LABEL, type PlanView } from '../../kube/views.js';
import { withTimeout, type OpContext } from '../../runtime/context.js';
import { isOutcomeError, OutcomeError, OutcomeKind } from '../../runtime/outcome.js';
import type { PassResult } from '../../runtime/queue.js';
import type { PlanPhaseObserver } from '../../telemetry/job-observer.js';
import type { Logger } from '../../telemetry/logger.js';
import { otherPlansOf, type RunPlanPreflight } from './preflight-port.js';
import type { TalosAccess } from '../../talos/talos-access.js';
import { observePlan, planOfJob, type HealthFacts, type PlanWithSpec } from './observe.js';
import { observePlanFresh, type FreshHealthFacts } from './confirm.js';
import { expressionProblems } from '../../health-checks/cel.js';
import { createAlertGateAnswers, type AlertGateAnswers } from '../../alertmanager/gate.js';
import { readConfigImages, withComponentImage } from '../../core/kubernetes/machine-config.js';
import { callFailure } from '../failure.js';
import { apiServerFacts } from '../kubernetes-facts.js';
import { createHookJob } from '../hooks.js';
import type { HookPolicy } from '../../core/hook-policy.js';
import type { PrePullRunner } from './pre-pull-runner.js';

const TALOS_CALL_MS = 20_000;

export interface PlanReconcilerDeps {
  kube: KubePort;
  informers: KubeInformers;
  /** The plan's preflight checks (controller/preflight, wired by the composition root). */
  preflight: RunPlanPreflight;
  /** Talos sessions from the plans' credentials Secrets (the kube-proxy step reads and applies a machine config). */
  talos: TalosAccess;
  operatorNamespace: string;
  /** Where hook Jobs run (--hooks-namespace), never the operator namespace. */
  hooksNamespace: string;
  /** The operator's hook allowlists (--hook-*); default: DEFAULT_HOOK_POLICY. */
  hookPolicy?: HookPolicy | undefined;
  /** NODE_NAME of this controller's pod: its node goes last in its group. */
  ownNode: string | undefined;
  preflightRetryMs: number;
  /** Gives up leadership (release the Lease, stop all work); undefined without leader election. */
  handOver: (() => void) | undefined;
  log: Logger;
  /** Told about every phase change this reconciler writes (notifications). */
  observer?: PlanPhaseObserver;
  /** The health-check watches' view of a check; undefined: every check is unavailable. */
  healthFacts?: HealthFacts;
  /** A check's objects listed live, before its timeout is given; undefined: the watches' view stands. */
  freshHealthFacts?: FreshHealthFacts;
  /** Alertmanager's answers for spec.alertGate (controller/alertmanager). */
  alertGate?: AlertGateAnswers;
  /** Runs installer pre-pulls in the background (spec.prePull); undefined: no plan pre-pulls. */
  prePulls?: PrePullRunner;
}

export function createPlanReconciler(
  given: PlanReconcilerDeps,
): (key: string, ctx: OpContext) => Promise<PassResult | undefined> {
  // Without Alertmanager every alert gate stays closed, saying the controller runs without --alertmanager-url.
  const deps = { ...given, alertGate: given.alertGate ?? createAlertGateAnswers(undefined, 60_000) };
  return async (key, ctx) => {
    const plan = deps.informers.patchPlans.get(key);
    if (!plan) return undefined;
    if (plan.deleting) return deleting(ctx, deps, plan);
    if (!plan.spec) return invalidSpec(ctx, deps, plan);
    // A plan applied with kubectl skipped the loader, where expressions are compiled.
    const cel = expressionProblems(plan.spec);
    if (cel.length > 0)
      return invalidSpec(ctx, deps, {
        ...plan,
        specError: cel.map((p) => `${formatPath(p.path)}: ${p.message}`).join('; '),
      });
    const log = deps.log.child({ plan: plan.name });
    const o = {
      ...observePlan({
        now: ctx.clock.now(),
        informers: deps.informers,
        plan: plan as PlanWithSpec,
        ownNode: deps.ownNode,
        preflightRetryMs: deps.preflightRetryMs,
        canHandOver: deps.handOver !== undefined,
        healthFacts: deps.healthFacts,
        alerts: deps.alertGate.facts(plan.name),
        prePulls: deps.prePulls,
      }),
      hookPolicy: deps.hookPolicy,
    };
    const pass: PlanPass = { plan: plan as PlanWithSpec, o, log };
    let step = decidePlan(o);
    if (step.confirm) step = await confirm(ctx, deps, pass, step);
    let current: PlanView = plan;
    if (step.action) {
      const r = await perform(ctx, deps, pass, { step, action: step.action });
      step = r.step;
      current = r.plan;
    }
    await writeStatus(ctx, deps, { plan: current, log }, step.status);
    // Queued, not awaited: the adapter writes Events in the background (kube/events.ts).
    for (const e of step.events) {
      void deps.kube.emitEvent(ctx, {
        regarding: { apiVersion: API_VERSION, kind: Kind.PatchPlan, name: plan.name, uid: plan.uid },
        type: e.type,
        reason: e.reason,
        action: e.reason,
        note: e.note,
      });
    }
    return { requeueAfterMs: step.requeueAfterMs };
  };
}

/** The plan a pass writes, and its logger (the plan's name on every line). */
interface PlanLog {
  plan: PlanView;
  log: Logger;
}

/** One pass: its plan (with a spec), what it observed, and its logger. */
interface PlanPass extends PlanLog {
  plan: PlanWithSpec;
  o: PlanObservation;
}

/** A step with its action, narrowed to the kind the function performs. */
interface StepAction<A> {
  step: PlanStep;
  action: A;
}

/** The facts the verdict rests on, read fresh, and the decision again; when a read fails, the plan says so and the queue backs off (no verdict). */
async function confirm(
  ctx: OpContext,
  deps: PlanReconcilerDeps,
  { plan, o, log }: PlanPass,
  step: PlanStep,
): Promise<PlanStep> {
  const reads = step.confirm ?? [];
  try {
    return decidePlan(await observePlanFresh(ctx, deps, { observation: o, reads }, log));
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    const failure = callFailure(err);
    log.warn(
      { reads: reads.join(', '), reason: failure.reason, err: failure.message },
      'could not read fresh facts to confirm a deadline verdict; retrying',
    );
    await writeStatus(ctx, deps, { plan, log }, decidePlan({ ...o, confirmFailure: failure }).status);
    throw new OutcomeError({
      kind: OutcomeKind.Transient,
      reason: 'ConfirmReadFailed',
      message: `confirming ${reads.join(', ')} of plan ${plan.name} before a deadline verdict: ${failure.message}`,
      cause: err,
    });
  }
}

async function perform(
  ctx: OpContext,
  deps: PlanReconcilerDeps & { alertGate: AlertGateAnswers },
  { plan, o }: PlanPass,
  { step, action }: StepAction<PlanAction>,
): Promise<{ step: PlanStep; plan: PlanView }> {
  switch (action.type) {
    case 'preflight':
      return { step: afterPreflight(o, step, await preflight(ctx, deps, plan, o)), plan };
    case 'pause': {
      const paused = await deps.kube.pausePlan(ctx, plan);
      deps.informers.patchPlans.observeWrite(paused);
      return {
        step: {
          ...step,
          status: {
            ...step.status,
            policyPause: step.status.policyPause
              ? { ...step.status.policyPause, generation: paused.generation }
              : undefined,
          },
        },
        plan: paused,
      };
    }
    case 'setKubeProxyImage':
      return { step: await setKubeProxyImage(ctx, deps, plan, { step, action }), plan };
    case 'scheduleNodes':
      return { step: await scheduleNodes(ctx, deps, plan, { step, action }), plan };
    default:
      await act(ctx, deps, plan, action);
      return { step, plan };
  }
}

/** The actions whose outcome leaves the pass's decision as it was. */
async function act(
  ctx: OpContext,
  deps: PlanReconcilerDeps & { alertGate: AlertGateAnswers },
  plan: PlanWithSpec,
  action: Exclude<PlanAction, { type: 'preflight' | 'pause' | 'setKubeProxyImage' | 'scheduleNodes' }>,
): Promise<void> {
  switch (action.type) {
    case 'createJobs':
      return createJobs(ctx, deps, plan, action.jobs);
    case 'deleteLeases':
      return deleteLeases(ctx, deps, action.leases);
    case 'deleteJobs':
      for (const name of action.names) await deps.kube.deletePatchJob(ctx, name);
      return;
    case 'createHookJob':
      await createHookJob(deps, ctx, action.job);
      return;
    case 'askAlertmanager':
      if (plan.spec.alertGate) await deps.alertGate.ask(ctx, plan.name, plan.spec.alertGate);
      return;
    case 'prePull':
      startPrePulls(deps, plan, action.pulls);
      return;
    case 'handOver':
      // The status write still happens: the abort only stops the next passes.
      deps.handOver?.();
      return;
  }
}

/** Hands the pulls to the background runner, not awaited: each pull that ends wakes the plan, whose next pass records it. */
function startPrePulls(
  deps: PlanReconcilerDeps,
  plan: PlanWithSpec,
  pulls: Extract<PlanAction, { type: 'prePull' }>['pulls'],
): void {
  const address = (node: string): string => deps.informers.nodes.get(node)?.internalIP ?? node;
  deps.prePulls?.start(
    plan.name,
    plan.spec.talosConfig,
    pulls.map((p) => ({ ...p, address: address(p.node) })),
  );
}

function preflight(
  ctx: OpContext,
  deps: PlanReconcilerDeps,
  plan: PlanWithSpec,
  o: PlanObservation,
): ReturnType<RunPlanPreflight> {
  const nodes = new Map(deps.informers.nodes.list().map((n) => [n.name, n]));
  const otherPlans = otherPlansOf(deps.informers.patchPlans.list(), o.nodes, plan.name);
  return deps.preflight(ctx, {
    spec: plan.spec,
    selection: selectNodes(plan.spec, o.nodes, deps.ownNode),
    nodes,
    otherPlans,
    apiServers: apiServerFacts(deps.informers),
  });
}

/** A round in one pass: the Leases (the claim), then the PatchJobs of those this pass created. A
 *  failed job create fails the pass before its status write; the next pass's finishRound creates it. */
async function scheduleNodes(
  ctx: OpContext,
  deps: PlanReconcilerDeps,
  plan: PlanWithSpec,
  { step, action }: StepAction<Extract<PlanAction, { type: 'scheduleNodes' }>>,
): Promise<PlanStep> {
  await deleteLeases(ctx, deps, action.release ?? []);
  const created = await createLeases(
    ctx,
    deps,
    plan,
    action.slots.map((s) => s.lease),
  );
  const claimed = action.slots.filter((_, i) => created[i]);
  await createJobs(
    ctx,
    deps,
    plan,
    claimed.flatMap((s) => (s.job ? [s.job] : [])),
  );
  return claimed.length === action.slots.length
    ? step
    : nodesScheduled(
        step,
        action.group,
        claimed.map((s) => s.node),
      );
}

/** The round's slot Leases, sent together: each is its own claim, so one round trip, not one per slot.
 *  A slot someone else holds (another replica, or our previous life) is skipped and the pass decides
 *  again on fresh caches; any other failure fails the pass once every create has answered, and the
 *  Leases made meanwhile wait for the next pass's finishRound. Returns which slots were created. */
async function createLeases(
  ctx: OpContext,
  deps: PlanReconcilerDeps,
  plan: PlanWithSpec,
  leases: readonly NewLease[],
): Promise<boolean[]> {
  const results = await Promise.allSettled(
    leases.map(async (l) => {
      deps.informers.slotLeases.observeWrite(
        await deps.kube.createSlotLease(ctx, {
          namespace: deps.operatorNamespace,
          name: l.name,
          labels: { [PLAN_LABEL]: plan.name, [GROUP_LABEL]: l.group },
          holderIdentity: l.holderIdentity,
        }),
      );
    }),
  );
  const held = (r: PromiseSettledResult<void>): boolean =>
    r.status === 'rejected' && isOutcomeError(r.reason) && r.reason.reason === 'AlreadyExists';
  const failure =
    results.find((r) => r.status === 'rejected' && !held(r)) ?? (results.every(held) ? results[0] : undefined);
  if (failure?.status === 'rejected') throw failure.reason;
  return results.map((r) => r.status === 'fulfilled');
}

/** PatchJobs with deterministic names, sent together: one that exists already (a race, or our
 *  previous life) is success. */
async function createJobs(
  ctx: OpContext,
  deps: PlanReconcilerDeps,
  plan: PlanWithSpec,
  jobs: readonly NewJob[],
): Promise<void> {
  await allAnswered(
    jobs.map(async (j) => {
      try {
        deps.informers.patchJobs.observeWrite(
          await deps.kube.createPatchJob(ctx, { ...j, owner: { name: plan.name, uid: plan.uid } }),
        );
      } catch (err) {
        if (!(isOutcomeError(err) && err.reason === 'AlreadyExists')) throw err;
      }
    }),
  );
}

/** Slot Leases deleted together, each forgotten by the cache as soon as its delete answered, not
 *  when its watch event comes: the pass (or the next one) sees the slot free and fills it. */
async function deleteLeases(
  ctx: OpContext,
  deps: PlanReconcilerDeps,
  leases: readonly PlanLeaseFacts[],
): Promise<void> {
  await allAnswered(
    leases.map(async (l) => {
      await deps.kube.deleteLease(ctx, deps.operatorNamespace, l.name, l.resourceVersion);
      deps.informers.slotLeases.observeDelete(l.name, l.resourceVersion);
    }),
  );
}

/** Calls sent together: a failure fails the pass only once every call has answered, so no call of
 *  this pass is still in flight when the next one decides. */
async function allAnswered(calls: readonly Promise<void>[]): Promise<void> {
  const failure = (await Promise.allSettled(calls)).find((r) => r.status === 'rejected');
  if (failure?.status === 'rejected') throw failure.reason;
}

/** Reads the node's machine config and applies it with the kube-proxy image set (its KubeProxyConfig document, else cluster.proxy.image); a config that has it (or disables kube-proxy) is left alone. */
async function setKubeProxyImage(
  ctx: OpContext,
  deps: PlanReconcilerDeps,
  plan: PlanWithSpec,
  { step, action }: StepAction<{ node: string; image: string }>,
): Promise<PlanStep> {
  const ip = deps.informers.nodes.get(action.node)?.internalIP ?? action.node;
  try {
    const talos = await deps.talos.connect(ctx, plan.spec.talosConfig, ip);
    try {
      const text = await talos.readConfig(withTimeout(ctx, TALOS_CALL_MS), ip);
      const read = readConfigImages(text);
      if (!read.ok) throw new Error(read.problem);
      if (read.proxyDisabled || read.images['kube-proxy'] === action.image) return step;
      const changed = withComponentImage(text, 'kube-proxy', action.image);
      if (typeof changed !== 'string') throw new Error(changed.problem);
      await talos.applyConfig(withTimeout(ctx, TALOS_CALL_MS), ip, changed);
      return step;
    } finally {
      talos.close();
    }
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    // Not recorded as configured: the next pass tries again until the kube-proxy deadline.
    const kubeProxy = step.status.kubeProxy && {
      ...step.status.kubeProxy,
      configuredNodes: step.status.kubeProxy.configuredNodes.filter((n) => n !== action.node),
    };
    const message = `setting kube-proxy ${action.image} in the machine config of ${action.node} failed (retrying until ${kubeProxy?.deadline ?? '?'}): ${callFailure(err).message}`;
    return {
      ...step,
      status: { ...step.status, kubeProxy, reason: 'KubeProxyConfigFailed', message },
      requeueAfterMs: 5_000,
    };
  }
}

/** A deleted plan: its finalizer goes once no PatchJob of it is running; until then its status says why it stays. */
async function deleting(ctx: OpContext, deps: PlanReconcilerDeps, plan: PlanView): Promise<undefined> {
  if (!plan.finalizers.includes(PLAN_FINALIZER)) return undefined;
  const jobs = deps.informers.patchJobs.list().filter((j) => planOfJob(j) === plan.name);
  const step = decideDeletion(
    plan.status,
    jobs.map((j) => ({ name: j.name, phase: j.status.phase })),
  );
  if (step.action === 'removeFinalizer') {
    deps.informers.patchPlans.observeWrite(await deps.kube.removePlanFinalizer(ctx, plan, PLAN_FINALIZER));
    deps.log.info({ plan: plan.name }, 'plan deleted: no PatchJob of it is running');
    return undefined;
  }
  if (!isDeepStrictEqual(step.status, plan.status))
    deps.informers.patchPlans.observeWrite(await deps.kube.writePlanStatus(ctx, plan, step.status));
  return undefined;
}

async function writeStatus(
  ctx: OpContext,
  deps: PlanReconcilerDeps,
  { plan, log }: PlanLog,
  status: PatchPlanStatus,
): Promise<void> {
  const source = {
    commit: plan.annotations[Annotation.SourceCommit],
    problems: plan.annotations[Annotation.SourceProblems],
  };
  const next = {
    ...withSourceStatus(status, source, plan.generation, ctx.clock.now()),
    observedGeneration: plan.generation,
  };
  if (next.policyPause === undefined) delete next.policyPause;
  if (isDeepStrictEqual(next, plan.status)) return;
  deps.informers.patchPlans.observeWrite(await deps.kube.writePlanStatus(ctx, plan, next));
  if (next.phase !== plan.status.phase) deps.observer?.phaseChanged(plan.status, next, plan);
  if (next.phase !== plan.status.phase || next.reason !== plan.status.reason) {
    log.info(
      { phase: next.phase, reason: next.reason, message: next.message },
      `plan ${next.phase ?? ''}${next.reason ? ` (${next.reason})` : ''}`,
    );
  }
}

async function invalidSpec(ctx: OpContext, deps: PlanReconcilerDeps, plan: PlanView): Promise<undefined> {
  if (plan.status.phase === 'Failed' && plan.status.reason === 'InvalidSpec') return undefined;
  const status: PatchPlanStatus = {
    ...plan.status,
    phase: 'Failed',
    reason: 'InvalidSpec',
    message: `spec is invalid: ${plan.specError ?? 'unknown'}`,
  };
  deps.informers.patchPlans.observeWrite(await deps.kube.writePlanStatus(ctx, plan, status));
  if (status.phase !== plan.status.phase) deps.observer?.phaseChanged(plan.status, status, plan);
  deps.log.warn(
    { plan: plan.name, phase: status.phase, reason: status.reason, message: status.message },
    'plan Failed (InvalidSpec)',
  );
  void deps.kube.emitEvent(ctx, {
    regarding: { apiVersion: API_VERSION, kind: Kind.PatchPlan, name: plan.name, uid: plan.uid },
    type: 'Warning',
    reason: 'InvalidSpec',
    action: 'InvalidSpec',
    note: status.message ?? '',
  });
  return undefined;
}
