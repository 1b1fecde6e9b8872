// Prometheus metrics (prom-client): one registry per process, served on --metrics-bind-address.
// Counters and histograms are fed through small hooks (the adapters and reconcilers never import
// prom-client); gauges of cluster state are computed from the informers' caches at scrape time
// (cluster-gauges.ts), so no reconcile pass pays for them.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface Metrics {
  registry: Registry;
  reconcileDuration: Histogram<'controller' | 'result'>;
  reconcileErrors: Counter<'controller' | 'reason'>;
  jobTransitions: Counter<'phase' | 'reason'>;
  nodeUpgradeDuration: Histogram;
  /** A control-plane node's job began waiting for etcd, by stage (beforeCordon, afterReboot). */
  etcdGateWaits: Counter<'stage'>;
  talosCalls: Counter<'method' | 'code'>;
  forgeRequests: Counter<'status'>;
  /** Reports `depth()` of the named work queue as kangal_patch_workqueue_depth{controller=name} at every scrape. */
  watchQueue: (controller: string, depth: () => number) => void;
  /** The forge adapter's hook: one finished HTTP request, its status code, or `error` when no response came. */
  forgeRequest: (status: number | 'error') => void;
  /** The Talos adapter's hook (TalosClientOptions.onCallEnd): one finished call, `OK` or its failure code. */
  talosCall: (method: string, code: string) => void;
  /** One GitOps poll: outcome `unchanged` (head did not move), `synced`, or the error reason. */
  gitPollDuration: Histogram<'outcome'>;
  gitPlansApplied: Counter<'reason'>;
  gitPlansDeleted: Counter;
  /** Problems in the plan files of the last loaded commit. */
  gitSourceProblems: Gauge;
  notifications: Counter<'receiver' | 'result'>;
  /** The notifier's hook: one event for one receiver ended `sent`, `failed` (after its retries) or `dropped` (queue full). */
  notification: (receiver: string, result: 'sent' | 'failed' | 'dropped') => void;
}

/** Upgrades take minutes: from the drain to Ready on the new version. */
const UPGRADE_BUCKETS = [30, 60, 120, 180, 300, 450, 600, 900, 1200, 1800, 2700, 3600];

export function createMetrics(): Metrics {
  const registry = new Registry();
  // The default metrics are already named process_* and nodejs_*: the prefix is only ours.
  collectDefaultMetrics({ register: registry, prefix: 'kangal_patch_' });
  const queues = new Map<string, () => number>();
  new Gauge({
    name: 'kangal_patch_workqueue_depth',
    help: 'Keys waiting in the work queue.',
    labelNames: ['controller'],
    registers: [registry],
    collect() {
      for (const [controller, depth] of queues) this.set({ controller }, depth());
    },
  });
  const talosCalls = new Counter({
    name: 'kangal_patch_talos_calls_total',
    help: 'Finished Talos API calls (after retries) by method and gRPC code.',
    labelNames: ['method', 'code'],
    registers: [registry],
  });
  const forgeRequests = new Counter({
    name: 'kangal_patch_forge_requests_total',
    help: 'Forge API requests by HTTP status (error: no response).',
    labelNames: ['status'],
    registers: [registry],
  });
  const notifications = new Counter({
    name: 'kangal_patch_notifications_total',
    help: 'Notifications per receiver by result: sent, failed (after retries) or dropped (queue full).',
    labelNames: ['receiver', 'result'],
    registers: [registry],
  });
  return {
    registry,
    reconcileDuration: new Histogram({
      name: 'kangal_patch_reconcile_duration_seconds',
      help: 'Duration of one reconcile pass.',
      labelNames: ['controller', 'result'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    reconcileErrors: new Counter({
      name: 'kangal_patch_reconcile_errors_total',
      help: 'Failed reconcile passes.',
      labelNames: ['controller', 'reason'],
      registers: [registry],
    }),
    jobTransitions: new Counter({
      name: 'kangal_patch_job_transitions_total',
      help: 'PatchJob phase changes written by this controller, by new phase and reason (failures by reason: phase="Failed").',
      labelNames: ['phase', 'reason'],
      registers: [registry],
    }),
    etcdGateWaits: new Counter({
      name: 'kangal_patch_etcd_gate_waits_total',
      help: 'Times the etcd gate held a control-plane node (WaitingForEtcd), by stage: beforeCordon (not yet safe to take it down) or afterReboot (its member catching up).',
      labelNames: ['stage'],
      registers: [registry],
    }),
    nodeUpgradeDuration: new Histogram({
      name: 'kangal_patch_node_upgrade_duration_seconds',
      help: 'Duration of a completed PatchJob, from its start to its completion.',
      buckets: UPGRADE_BUCKETS,
      registers: [registry],
    }),
    talosCalls,
    forgeRequests,
    watchQueue: (controller, depth) => {
      queues.set(controller, depth);
    },
    forgeRequest: (status) => forgeRequests.inc({ status: String(status) }),
    talosCall: (method, code) => talosCalls.inc({ method, code }),
    gitPollDuration: new Histogram({
      name: 'kangal_patch_git_poll_duration_seconds',
      help: 'Duration of one poll of the plans repository, by outcome (unchanged, synced, or the error reason).',
      labelNames: ['outcome'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    gitPlansApplied: new Counter({
      name: 'kangal_patch_git_plans_applied_total',
      help: 'PatchPlans applied from Git, by reason (Created, Changed, NewCommit, DriftReverted).',
      labelNames: ['reason'],
      registers: [registry],
    }),
    gitPlansDeleted: new Counter({
      name: 'kangal_patch_git_plans_deleted_total',
      help: 'PatchPlans deleted because their file left Git.',
      registers: [registry],
    }),
    gitSourceProblems: new Gauge({
      name: 'kangal_patch_git_source_problems',
      help: 'Problems in the plan files of the last loaded commit.',
      registers: [registry],
    }),
    notifications,
    notification: (receiver, result) => notifications.inc({ receiver, result }),
  };
}
