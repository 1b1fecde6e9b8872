// Composition root of `kangal-patch run`: config → adapters → caches → leader election → work
// queue → signals. Leader loss and SIGTERM abort all work at once; every step is resumable from
// status, so abandoning an action is safe.
import type { Server } from 'node:http';
import { API_VERSION } from '../schemas/api.js';
import type { RunConfig } from './config.js';
import { createKube, type Kube } from './kube/index.js';
import { hasGit, runGitops } from './gitops/wiring.js';
import { startWriteBack, type WriteBack } from './gitops/report/wiring.js';
import { startAutoUpdateProposals, sweepAfterFirstSync } from './gitops/auto-update/wiring.js';
import type { AutoUpdater } from './gitops/auto-update/proposer.js';
import type { GitopsLoop } from './gitops/loop.js';
import { createJobReconciler } from './rollout/job/reconciler.js';
import { talosAccess, type TalosAccess } from './talos/talos-access.js';
import { wireJobEvents } from './rollout/job/triggers.js';
import { createPlanReconciler } from './rollout/plan/reconciler.js';
import { createPrePullRunner } from './rollout/plan/pre-pull-runner.js';
import { startHealthWatches } from './health-checks/triggers.js';
import { createAlertmanagerClient, type AlertmanagerPort } from './alertmanager/client.js';
import { createAlertGateAnswers } from './alertmanager/gate.js';
import { wirePlanEvents } from './rollout/plan/triggers.js';
import { createRegistryClient } from './registry/index.js';
import { releasesClientWithTokenFile } from './forge/releases.js';
import { pathVersionSources } from './preflight/path-versions.js';
import { shiftedClock, systemClock, type Clock } from './runtime/clock.js';
import { createLeaderElector, type LeaderElector } from './runtime/leader.js';
import { WorkQueue } from './runtime/queue.js';
import { rootContext } from './runtime/context.js';
import { isOutcomeError } from './runtime/outcome.js';
import { runPreflight, type PreflightDeps } from './preflight/run.js';
import { serve } from './telemetry/http.js';
import { logFn, type Logger } from './telemetry/logger.js';
import { registerClusterGauges, registerPodCacheGauges } from './telemetry/cluster-gauges.js';
import { jobMetricsObserver, type JobPhaseObserver } from './telemetry/job-observer.js';
import { startNotifications, type NotifyWiring } from './notify/wiring.js';
import { createMetrics, type Metrics } from './telemetry/metrics.js';
import { closeAllTalosChannels } from './talos/index.js';

export async function runController(cfg: RunConfig, log: Logger, shutdown: AbortSignal): Promise<number> {
  const clock = controllerClock(cfg, log);
  const healthCheckUser = `system:serviceaccount:${cfg.namespace}:${cfg.healthCheckServiceAccount}`;
  const kube = createKube({
    kubeconfig: cfg.kubeconfig,
    operatorNamespace: cfg.namespace,
    hooksNamespace: cfg.hooksNamespace,
    clock,
    logger: logFn(log),
    reportingInstance: cfg.identity,
    healthCheckUser,
  });
  const metrics = createMetrics();
  const informers = kube.informers;
  registerClusterGauges(metrics.registry, informers, clock);
  registerPodCacheGauges(metrics.registry, informers);
  const caches = [informers.nodes, informers.staticPods, informers.hookPods, informers.slotLeases, informers.patchJobs];
  let leading = false;
  const servers = await startEndpoints(cfg, log, metrics, () => readiness(caches, leading));

  kube.startInformers(shutdown);
  await Promise.race([kube.synced(), abortPromise(shutdown)]);
  if (shutdown.aborted) return finish(servers, log, 0);
  log.info('caches synced');

  const work = new AbortController();
  shutdown.addEventListener('abort', () => work.abort(shutdown.reason), { once: true });
  const elector = cfg.leaderElect ? leaderElector(cfg, kube, clock, log) : undefined;
  if (elector && !(await acquireLeadership(elector, cfg, log, { shutdown, work }))) return finish(servers, log, 0);
  leading = true;
  log.info({ identity: cfg.identity, apiVersion: API_VERSION }, 'leading: reconciling PatchPlans and PatchJobs');

  const notifications = cfg.notify
    ? startNotifications(
        cfg.notify,
        {
          cluster: cfg.clusterName,
          clock,
          log: logFn(log),
          onResult: metrics.notification,
          plans: kube.informers.patchPlans,
          jobs: kube.informers.patchJobs,
        },
        work.signal,
      )
    : undefined;
  const queues = { clock, metrics, log };
  // Oldest job first: when passes queue up (many jobs in flight), the nodes already cordoned and
  // rebooted finish, and give their slot back, before new jobs take a worker to begin.
  const oldestFirst = (key: string): number => kube.informers.patchJobs.get(key)?.created ?? 0;
  const jobs = reconcileQueue(
    'patchjob',
    { concurrency: cfg.maxConcurrentReconciles, passTimeoutMs: 60 * 60_000, order: oldestFirst },
    queues,
  );
  const talos = talosAccess(kube.port, cfg.namespace, { onCallEnd: metrics.talosCall });
  const alertmanager = alertmanagerOf(cfg);
  let handedOver = false;
  startJobs(jobs, { kube, talos, cfg, log, metrics, notifications, alertmanager }, work.signal);
  // A handover stops all work once the pass that decided it has written its status.
  const plans = reconcileQueue('patchplan', { concurrency: 4, passTimeoutMs: 10 * 60_000 }, queues, () => {
    if (handedOver) work.abort(new Error('handed over'));
  });
  const handOver = elector
    ? (): void => {
        handedOver = true;
        log.info({ node: cfg.nodeName }, 'handing leadership over: this controller runs on the next node to patch');
      }
    : undefined;
  const preflight = startPlans(
    plans,
    { kube, talos, cfg, log, handOver, notifications, clock, alertmanager },
    work.signal,
  );
  const git = startGitSide(cfg, { kube, preflight, clock, log, metrics, notifications }, work.signal);

  await abortPromise(work.signal);
  const lost = !shutdown.aborted && !handedOver;
  log.info(stopMessage(lost, handedOver));
  await drained({ jobs, plans, git, notifications });
  if (elector && !lost)
    await elector
      .release()
      .catch((err: unknown) => log.warn({ err: String(err) }, 'could not release the leader lease'));
  // After a handover the process ends; restarted (as the Deployment does), it stands by.
  return finish(servers, log, lost ? 1 : 0);
}

/** The Alertmanager client of --alertmanager-url; undefined without one. */
function alertmanagerOf(cfg: RunConfig): AlertmanagerPort | undefined {
  return cfg.alertmanagerUrl === undefined
    ? undefined
    : createAlertmanagerClient({ url: cfg.alertmanagerUrl, tokenFile: cfg.alertmanagerTokenFile });
}

/** What runs while leading, to be drained or stopped when the work stops. */
interface Running {
  jobs: WorkQueue;
  plans: WorkQueue;
  git: GitSide;
  notifications: NotifyWiring | undefined;
}

/** Settles once both queues drained and the GitOps loop, write-back, proposals and notifications stopped. */
async function drained({ jobs, plans, git, notifications }: Running): Promise<void> {
  await Promise.all([
    jobs.drain(),
    plans.drain(),
    git.gitops,
    git.writeBack?.reporter.stop(),
    git.autoUpdate?.stop(),
    notifications?.stopped,
  ]);
}

function controllerClock(cfg: RunConfig, log: Logger): Clock {
  if (cfg.debugClockOffsetMs === 0) return systemClock;
  const clock = shiftedClock(cfg.debugClockOffsetMs);
  log.warn({ offsetMs: cfg.debugClockOffsetMs }, 'the controller clock is shifted (KANGAL_PATCH_DEBUG_CLOCK_OFFSET)');
  return clock;
}

/** Ready once the caches the reconcilers read have synced, leading or standing by. */
function readiness(caches: readonly { isSynced(): boolean }[], leading: boolean): { ready: boolean; why: string } {
  if (!caches.every((c) => c.isSynced())) return { ready: false, why: 'caches not synced' };
  return { ready: true, why: leading ? 'ok (leader)' : 'ok (standby)' };
}

/** The health probe and metrics servers, each only when its bind address is set. */
async function startEndpoints(
  cfg: RunConfig,
  log: Logger,
  metrics: Metrics,
  readyz: () => { ready: boolean; why: string },
): Promise<Server[]> {
  const servers: Server[] = [];
  if (cfg.healthProbeBindAddress) {
    const h = await serve(cfg.healthProbeBindAddress, { healthz: () => true, readyz });
    servers.push(h.server);
    log.info({ port: h.port, address: cfg.healthProbeBindAddress.host }, 'health probes listening');
  }
  if (cfg.metricsBindAddress) {
    const m = await serve(cfg.metricsBindAddress, {
      healthz: () => true,
      readyz: () => ({ ready: true, why: 'ok' }),
      registry: metrics.registry,
    });
    servers.push(m.server);
    log.info({ port: m.port, address: cfg.metricsBindAddress.host }, 'metrics listening');
  }
  return servers;
}

function leaderElector(cfg: RunConfig, kube: Kube, clock: Clock, log: Logger): LeaderElector {
  return createLeaderElector({
    store: kube.leaderLease(cfg.leaderElectionId),
    identity: cfg.identity,
    clock,
    leaseDurationMs: cfg.leaderElectionLeaseDuration,
    renewDeadlineMs: cfg.leaderElectionRenewDeadline,
    retryPeriodMs: cfg.leaderElectionRetryPeriod,
    onStateChange: (change) => log.info({ identity: cfg.identity, ...change }, `leader election: ${change.state}`),
    log: logFn(log),
  });
}

/** The process's shutdown, and the leader's work that both shutdown and a lost lease abort. */
interface Stops {
  shutdown: AbortSignal;
  work: AbortController;
}

/** Waits until this replica leads (false: shut down while standing by); losing the lease later aborts `work`. */
async function acquireLeadership(
  elector: LeaderElector,
  cfg: RunConfig,
  log: Logger,
  { shutdown, work }: Stops,
): Promise<boolean> {
  log.info({ identity: cfg.identity, lease: `${cfg.namespace}/${cfg.leaderElectionId}` }, 'waiting to become leader');
  try {
    await elector.acquire(shutdown);
  } catch (err) {
    if (shutdown.aborted) return false;
    throw err;
  }
  elector.lost.addEventListener('abort', () => work.abort(new Error('leadership lost')), { once: true });
  return true;
}

/** The log field that names a failed key, per queue. */
const QUEUE_KEY_FIELD = { patchjob: 'job', patchplan: 'plan' } as const;
type QueueName = keyof typeof QUEUE_KEY_FIELD;

/** A work queue with its errors and pass durations in the metrics, its depth watched; `afterPass` runs after each pass. */
function reconcileQueue(
  controller: QueueName,
  limits: { concurrency: number; passTimeoutMs: number; order?: (key: string) => number },
  w: { clock: Clock; metrics: Metrics; log: Logger },
  afterPass?: () => void,
): WorkQueue {
  const { metrics, log } = w;
  const queue = new WorkQueue({
    name: controller,
    concurrency: limits.concurrency,
    clock: w.clock,
    passTimeoutMs: limits.passTimeoutMs,
    ...(limits.order ? { order: limits.order } : {}),
    onError: (key, err, retryIn) => {
      const reason = isOutcomeError(err) ? err.reason : 'Error';
      metrics.reconcileErrors.inc({ controller, reason });
      log.warn(
        {
          [QUEUE_KEY_FIELD[controller]]: key,
          reason,
          err: err instanceof Error ? err.message : String(err),
          retryInMs: retryIn,
        },
        'reconcile failed',
      );
    },
    onPass: (_key, ms, ok) => {
      metrics.reconcileDuration.observe({ controller, result: ok ? 'ok' : 'error' }, ms / 1000);
      afterPass?.();
    },
  });
  metrics.watchQueue(controller, () => queue.depth());
  return queue;
}

interface ReconcilerWiring {
  kube: Kube;
  talos: TalosAccess;
  cfg: RunConfig;
  log: Logger;
  /** With --notify-config-file: the reconcilers' phase changes become notifications. */
  notifications: NotifyWiring | undefined;
  /** With --alertmanager-url: the alert gate's answers and the silences. */
  alertmanager: AlertmanagerPort | undefined;
}

/** PatchJob events feed the queue; every known job gets a first pass. */
function startJobs(queue: WorkQueue, w: ReconcilerWiring & { metrics: Metrics }, signal: AbortSignal): void {
  const { kube, cfg } = w;
  wireJobEvents(kube.informers, queue, signal);
  const counted = jobMetricsObserver(w.metrics);
  const notified = w.notifications?.job;
  const observer: JobPhaseObserver = {
    phaseChanged: (before, after, job) => {
      counted.phaseChanged(before, after);
      notified?.phaseChanged(before, after, job);
    },
    reasonChanged: (before, after) => counted.reasonChanged(before, after),
  };
  queue.start(
    createJobReconciler({
      kube: kube.port,
      informers: kube.informers,
      connectTalos: w.talos.connect,
      operatorNamespace: cfg.namespace,
      hooksNamespace: cfg.hooksNamespace,
      hookPolicy: cfg.hookPolicy,
      log: w.log,
      observer,
      alertmanager: w.alertmanager,
    }),
    signal,
  );
  for (const job of kube.informers.patchJobs.list()) queue.add(job.name);
}

/** PatchPlan events feed the queue; every known plan gets a first pass. Returns the preflight deps (the auto-update proposals share them). */
function startPlans(
  queue: WorkQueue,
  w: ReconcilerWiring & { handOver: (() => void) | undefined; clock: Clock },
  signal: AbortSignal,
): PreflightDeps {
  const { kube, cfg } = w;
  wirePlanEvents(kube.informers, queue);
  const health = startHealthWatches(
    { informers: kube.informers, objects: kube.objects, queue, clock: w.clock, log: logFn(w.log) },
    signal,
  );
  const registry = createRegistryClient({ mirrors: cfg.registryMirror });
  const pathVersions = pathVersionSources({
    releases: releasesClientWithTokenFile({ baseUrl: cfg.releasesApiUrl, tokenFile: cfg.releasesTokenFile }),
    registry,
  });
  const preflight = {
    kube: kube.port,
    talos: w.talos,
    images: registry,
    objects: kube.objects,
    hookPolicy: cfg.hookPolicy,
    pathVersions,
  };
  const prePulls = createPrePullRunner({
    ctx: rootContext(w.clock, signal),
    connectTalos: w.talos.connect,
    wake: (plan) => queue.add(plan),
    log: w.log,
  });
  queue.start(
    createPlanReconciler({
      kube: kube.port,
      informers: kube.informers,
      preflight: (ctx, input) => runPreflight(ctx, preflight, input),
      talos: preflight.talos,
      operatorNamespace: cfg.namespace,
      hooksNamespace: cfg.hooksNamespace,
      hookPolicy: cfg.hookPolicy,
      ownNode: cfg.nodeName,
      preflightRetryMs: cfg.preflightRetryPeriod,
      handOver: w.handOver,
      log: w.log,
      observer: w.notifications?.plan,
      healthFacts: (c) => health.facts(c),
      freshHealthFacts: (ctx, c) => health.freshFacts(ctx, c),
      alertGate: createAlertGateAnswers(w.alertmanager, cfg.alertmanagerInterval),
      prePulls,
    }),
    signal,
  );
  for (const plan of kube.informers.patchPlans.list()) queue.add(plan.name);
  return preflight;
}

interface GitSide {
  writeBack: WriteBack | undefined;
  autoUpdate: AutoUpdater | undefined;
  /** Settles when the GitOps loop stops (its failure logged, never thrown). */
  gitops: Promise<void>;
}

/** Polling Git, the write-back and the auto-update proposals. Without --git-url the controller runs on PatchPlans applied with kubectl alone. */
function startGitSide(
  cfg: RunConfig,
  w: {
    kube: Kube;
    preflight: PreflightDeps;
    clock: Clock;
    log: Logger;
    metrics: Metrics;
    notifications: NotifyWiring | undefined;
  },
  signal: AbortSignal,
): GitSide {
  if (!hasGit(cfg)) return { writeBack: undefined, autoUpdate: undefined, gitops: Promise.resolve() };
  const { kube, clock, log, metrics } = w;
  const informers = kube.informers;
  const writeBack = startWriteBack(cfg, { kube: kube.port, informers, clock, log, metrics }, signal);
  let gitopsLoop: GitopsLoop | undefined;
  const autoUpdate = writeBack
    ? startAutoUpdateProposals(
        cfg,
        {
          kube: kube.port,
          informers,
          writeBack,
          preflight: w.preflight,
          templateText: (file) => gitopsLoop?.fileText(file),
          reportFiles: () => gitopsLoop?.reportFiles(),
          clock,
          log,
          onProposalOpened: w.notifications?.proposalOpened,
        },
        signal,
      )
    : undefined;
  const loopStarted = (loop: GitopsLoop): void => {
    gitopsLoop = loop;
    if (autoUpdate) sweepAfterFirstSync(loop, autoUpdate);
  };
  const gitops = runGitops(
    cfg,
    { kube: kube.port, informers, clock, log, metrics, forge: writeBack?.forge },
    signal,
    loopStarted,
  ).catch((err: unknown) => {
    log.error({ err: err instanceof Error ? err.message : String(err) }, 'GitOps loop stopped');
  });
  return { writeBack, autoUpdate, gitops };
}

function stopMessage(lost: boolean, handedOver: boolean): string {
  if (lost) return 'leadership lost: stopping all work';
  if (handedOver) return 'handed over: stopping all work';
  return 'shutting down: stopping work';
}

async function finish(servers: readonly Server[], log: Logger, code: number): Promise<number> {
  closeAllTalosChannels();
  await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  log.info({ code }, 'stopped');
  return code;
}

function abortPromise(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
