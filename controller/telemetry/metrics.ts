// Prometheus metrics (prom-client): one registry per process, served on --metrics-bind-address.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  reconcileDuration: Histogram<'controller' | 'result'>;
  reconcileErrors: Counter<'controller' | 'reason'>;
  queueDepth: Gauge<'controller'>;
  jobTransitions: Counter<'phase' | 'reason'>;
  /** One GitOps poll: outcome `unchanged` (head did not move), `synced`, or the error reason. */
  gitPollDuration: Histogram<'outcome'>;
  gitPlansApplied: Counter<'reason'>;
  gitPlansDeleted: Counter;
  /** Problems in the plan files of the last loaded commit. */
  gitSourceProblems: Gauge;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'kangal_patch_process_' });
  return {
    registry,
    reconcileDuration: new Histogram({
      name: 'kangal_patch_reconcile_duration_seconds',
      help: 'Duration of one reconcile pass.',
      labelNames: ['controller', 'result'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    reconcileErrors: new Counter({ name: 'kangal_patch_reconcile_errors_total', help: 'Failed reconcile passes.', labelNames: ['controller', 'reason'], registers: [registry] }),
    queueDepth: new Gauge({ name: 'kangal_patch_workqueue_depth', help: 'Keys waiting in the work queue.', labelNames: ['controller'], registers: [registry] }),
    jobTransitions: new Counter({ name: 'kangal_patch_job_transitions_total', help: 'PatchJob phase changes.', labelNames: ['phase', 'reason'], registers: [registry] }),
    gitPollDuration: new Histogram({
      name: 'kangal_patch_git_poll_duration_seconds',
      help: 'Duration of one poll of the plans repository, by outcome (unchanged, synced, or the error reason).',
      labelNames: ['outcome'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    gitPlansApplied: new Counter({ name: 'kangal_patch_git_plans_applied_total', help: 'PatchPlans applied from Git, by reason (Created, Changed, NewCommit, DriftReverted).', labelNames: ['reason'], registers: [registry] }),
    gitPlansDeleted: new Counter({ name: 'kangal_patch_git_plans_deleted_total', help: 'PatchPlans deleted because their file left Git.', registers: [registry] }),
    gitSourceProblems: new Gauge({ name: 'kangal_patch_git_source_problems', help: 'Problems in the plan files of the last loaded commit.', registers: [registry] }),
  };
}
