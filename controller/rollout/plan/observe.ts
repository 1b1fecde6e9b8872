// Observe for one plan pass, all from the caches: the plan, every node (projected), the plan's
// PatchJobs and slot Leases; for a Kubernetes target the kube-apiservers and the kube-proxy DaemonSet.
import type { CheckFacts } from '../../core/gates/health.js';
import type { AlertFacts } from '../../core/gates/alerts.js';
import type { PlanJobFacts, PlanObservation } from '../../core/plan/types.js';
import { planJobPhase } from '../../core/plan/progress.js';
import type { HealthCheck } from '../../../schemas/health.js';
import type { KubeInformers } from '../../kube/port.js';
import { GROUP_LABEL, KUBE_PROXY, PLAN_LABEL, type JobView, type PlanView } from '../../kube/views.js';
import { HOP_LABEL } from '../../core/plan/jobs.js';
import { movesKubernetes } from '../../core/plan/path.js';
import { apiServerFacts } from '../kubernetes-facts.js';
import { hookJobFacts } from '../hooks.js';
import type { PrePullRunner } from './pre-pull-runner.js';

export type PlanWithSpec = PlanView & { spec: NonNullable<PlanView['spec']> };

/** What the health-check watches see of one check (controller/health-checks). */
export type HealthFacts = (check: HealthCheck) => CheckFacts;

/** The plan a PatchJob belongs to. */
export const planOfJob = (j: JobView): string | undefined => j.spec?.patchPlanRef ?? j.labels[PLAN_LABEL];

/**
 * Facts of each job view, kept while the view is: the cache replaces a view on every change, so a
 * plan pass projects only the jobs that changed since the last, not all of them (at 5,000 jobs, each
 * pass built and parsed 5,000 of these).
 */
const factsOfView = new WeakMap<JobView, PlanJobFacts>();

/** All a plan reads of one of its PatchJobs: a job event that leaves this unchanged does not wake the plan (wiring.ts). */
export function planJobFacts(j: JobView): PlanJobFacts {
  const known = factsOfView.get(j);
  if (known !== undefined) return known;
  const facts = projectJobFacts(j);
  factsOfView.set(j, facts);
  return facts;
}

function projectJobFacts(j: JobView): PlanJobFacts {
  return {
    name: j.name,
    nodeName: j.spec?.nodeName ?? '',
    group: j.spec?.group ?? '',
    ...(j.labels[HOP_LABEL] === undefined ? {} : { hop: Number(j.labels[HOP_LABEL]) }),
    phase: planJobPhase(j.status.phase),
    completionTime: j.status.completionTime === undefined ? undefined : Date.parse(j.status.completionTime),
    slotReleased: j.status.slotReleasedTime !== undefined,
    postNodeHookPending: postNodeHookPending(j),
  };
}

/** The job has a postNode hook that has not ended (Succeeded or Failed) yet. */
function postNodeHookPending(j: JobView): boolean {
  return (
    j.spec?.hooks?.postNode !== undefined &&
    !['Succeeded', 'Failed'].includes(j.status.hooks?.find((h) => h.hook === 'postNode')?.phase ?? '')
  );
}

export interface ObservePlanInput {
  now: number;
  informers: KubeInformers;
  plan: PlanWithSpec;
  /** NODE_NAME of this controller's pod: its node goes last in its group. */
  ownNode: string | undefined;
  preflightRetryMs: number;
  canHandOver: boolean;
  /** The health-check watches' view of a check; undefined: every check is unavailable. */
  healthFacts?: HealthFacts | undefined;
  alerts?: AlertFacts | undefined;
  prePulls?: PrePullRunner | undefined;
}

export function observePlan({
  now,
  informers,
  plan,
  ownNode,
  preflightRetryMs,
  canHandOver,
  healthFacts,
  alerts,
  prePulls,
}: ObservePlanInput): PlanObservation {
  const jobs = informers.patchJobs
    .list()
    .filter((j) => planOfJob(j) === plan.name)
    .map(planJobFacts);
  const leases = informers.slotLeases
    .list()
    .filter((l) => l.labels[PLAN_LABEL] === plan.name)
    .map((l) => ({
      name: l.name,
      resourceVersion: l.resourceVersion,
      group: l.labels[GROUP_LABEL] ?? '',
      holderIdentity: l.holderIdentity,
    }));
  const nodes = informers.nodes.list();
  // Asked only of nodes with a pull result (at most a round's worth), not of every node on every pass.
  let withJob: ReadonlySet<string> | undefined;
  const waitingForJob = (node: string): boolean =>
    informers.nodes.get(node) !== undefined && !(withJob ??= new Set(jobs.map((j) => j.nodeName))).has(node);
  return {
    now,
    plan: { name: plan.name, uid: plan.uid, generation: plan.generation, spec: plan.spec, status: plan.status },
    nodes,
    jobs,
    leases,
    ownNode,
    preflightRetryMs,
    canHandOver,
    ...(plan.spec.healthChecks === undefined
      ? {}
      : { healthChecks: plan.spec.healthChecks.map((c) => healthFacts?.(c)) }),
    ...(plan.spec.hooks === undefined ? {} : { hookJobs: hookJobFacts(informers, PLAN_LABEL, plan.name) }),
    ...(plan.spec.alertGate === undefined || alerts === undefined ? {} : { alerts }),
    ...(prePulls === undefined ? {} : { prePulls: prePulls.facts(plan.name, { has: waitingForJob }) }),
    ...(!movesKubernetes(plan.spec)
      ? {}
      : { apiServers: apiServerFacts(informers), kubeProxy: informers.kubeProxy.get(KUBE_PROXY.name) }),
  };
}
