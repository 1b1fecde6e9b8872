// Composition root of `kangal-patch run`: config → adapters → caches → leader election → work
// queue → signals. Leader loss and SIGTERM abort all work at once; every step is resumable from
// status, so abandoning an action is safe.
import type { Server } from 'node:http';
import { API_VERSION } from '../schemas/api.js';
import type { RunConfig } from './config.js';
import { createKube } from './kube/index.js';
import { hasGit, runGitops } from './gitops/wiring.js';
import { startWriteBack } from './gitops/reporting.js';
import { startAutoUpdateProposals, sweepAfterFirstSync } from './gitops/auto-update/wiring.js';
import type { GitopsLoop } from './gitops/loop.js';
import { createJobReconciler } from './rollout/job/reconciler.js';
import { talosConnector } from './rollout/job/talos-access.js';
import { wireJobEvents } from './rollout/job/wiring.js';
import { createPlanReconciler } from './rollout/plan/reconciler.js';
import { wirePlanEvents } from './rollout/plan/wiring.js';
import { createRegistryClient } from './registry/index.js';
import { shiftedClock, systemClock } from './runtime/clock.js';
import { createLeaderElector } from './runtime/leader.js';
import { WorkQueue } from './runtime/queue.js';
import { isOutcomeError } from './runtime/outcome.js';
import { serve } from './telemetry/http.js';
import { logFn, type Logger } from './telemetry/logger.js';
import { registerClusterGauges } from './telemetry/cluster-gauges.js';
import { jobMetricsObserver } from './telemetry/job-observer.js';
import { createMetrics } from './telemetry/metrics.js';
import { closeAllTalosChannels } from './talos/index.js';

export async function runController(cfg: RunConfig, log: Logger, shutdown: AbortSignal): Promise<number> {
  const clock = cfg.debugClockOffsetMs === 0 ? systemClock : shiftedClock(cfg.debugClockOffsetMs);
  if (cfg.debugClockOffsetMs !== 0) log.warn({ offsetMs: cfg.debugClockOffsetMs }, 'the controller clock is shifted (KANGAL_PATCH_DEBUG_CLOCK_OFFSET)');
  const kube = createKube({ kubeconfig: cfg.kubeconfig, operatorNamespace: cfg.namespace, clock, logger: logFn(log), reportingInstance: cfg.identity });
  const metrics = createMetrics();
  const informers = kube.informers;
  registerClusterGauges(metrics.registry, informers, clock);
  const caches = [informers.nodes, informers.pods, informers.slotLeases, informers.patchJobs];
  let leading = false;
  const servers: Server[] = [];
  if (cfg.healthProbeBindAddress) {
    const h = await serve(cfg.healthProbeBindAddress, {
      healthz: () => true,
      readyz: () => (caches.every((c) => c.isSynced()) ? { ready: true, why: leading ? 'ok (leader)' : 'ok (standby)' } : { ready: false, why: 'caches not synced' }),
    });
    servers.push(h.server);
    log.info({ port: h.port, address: cfg.healthProbeBindAddress.host }, 'health probes listening');
  }
  if (cfg.metricsBindAddress) {
    const m = await serve(cfg.metricsBindAddress, { healthz: () => true, readyz: () => ({ ready: true, why: 'ok' }), registry: metrics.registry });
    servers.push(m.server);
    log.info({ port: m.port, address: cfg.metricsBindAddress.host }, 'metrics listening');
  }
  const closeServers = (): Promise<void[]> => Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));

  kube.startInformers(shutdown);
  await Promise.race([kube.synced(), abortPromise(shutdown)]);
  if (shutdown.aborted) return finish(0);
  log.info('caches synced');

  const work = new AbortController();
  shutdown.addEventListener('abort', () => work.abort(shutdown.reason), { once: true });
  const elector = cfg.leaderElect
    ? createLeaderElector({
        store: kube.leaderLease(cfg.leaderElectionId),
        identity: cfg.identity,
        clock,
        leaseDurationMs: cfg.leaderElectionLeaseDuration,
        renewDeadlineMs: cfg.leaderElectionRenewDeadline,
        retryPeriodMs: cfg.leaderElectionRetryPeriod,
        onStateChange: (change) => log.info({ identity: cfg.identity, ...change }, `leader election: ${change.state}`),
        log: logFn(log),
      })
    : undefined;
  if (elector) {
    log.info({ identity: cfg.identity, lease: `${cfg.namespace}/${cfg.leaderElectionId}` }, 'waiting to become leader');
    try {
      await elector.acquire(shutdown);
    } catch (err) {
      if (shutdown.aborted) return finish(0);
      throw err;
    }
    elector.lost.addEventListener('abort', () => work.abort(new Error('leadership lost')), { once: true });
  }
  leading = true;
  log.info({ identity: cfg.identity, apiVersion: API_VERSION }, 'leading: reconciling PatchPlans and PatchJobs');

  const queueErrors = (controller: string) => (key: string, err: unknown, retryIn: number | undefined): void => {
    const reason = isOutcomeError(err) ? err.reason : 'Error';
    metrics.reconcileErrors.inc({ controller, reason });
    log.warn({ [controller === 'patchjob' ? 'job' : 'plan']: key, reason, err: err instanceof Error ? err.message : String(err), retryInMs: retryIn }, 'reconcile failed');
  };
  const queue = new WorkQueue({
    name: 'patchjob',
    concurrency: cfg.maxConcurrentReconciles,
    clock,
    passTimeoutMs: 60 * 60_000,
    onError: queueErrors('patchjob'),
    onPass: (_key, ms, ok) => metrics.reconcileDuration.observe({ controller: 'patchjob', result: ok ? 'ok' : 'error' }, ms / 1000),
  });
  metrics.watchQueue('patchjob', () => queue.depth());
  const connectTalos = talosConnector(kube.port, cfg.namespace, { onCallEnd: metrics.talosCall });
  let handedOver = false;
  wireJobEvents(informers, queue);
  queue.start(createJobReconciler({ kube: kube.port, informers, connectTalos, operatorNamespace: cfg.namespace, log, observer: jobMetricsObserver(metrics) }), work.signal);
  for (const job of informers.patchJobs.list()) queue.add(job.name);

  // A handover stops all work once the pass that decided it has written its status.
  const plans = new WorkQueue({ name: 'patchplan', concurrency: 4, clock, passTimeoutMs: 10 * 60_000, onError: queueErrors('patchplan'), onPass: (_key, ms, ok) => {
    metrics.reconcileDuration.observe({ controller: 'patchplan', result: ok ? 'ok' : 'error' }, ms / 1000);
    if (handedOver) work.abort(new Error('handed over'));
  } });
  metrics.watchQueue('patchplan', () => plans.depth());
  wirePlanEvents(informers, plans);
  const preflight = { kube: kube.port, connectTalos, images: createRegistryClient({ mirrors: cfg.registryMirror }) };
  const handOver = elector
    ? (): void => {
        handedOver = true;
        log.info({ node: cfg.nodeName }, 'handing leadership over: this controller runs on the next node to patch');
      }
    : undefined;
  plans.start(createPlanReconciler({ kube: kube.port, informers, preflight, operatorNamespace: cfg.namespace, ownNode: cfg.nodeName, preflightRetryMs: cfg.preflightRetryPeriod, handOver, log }), work.signal);
  for (const plan of informers.patchPlans.list()) plans.add(plan.name);
  // Without --git-url the controller runs on PatchPlans applied with kubectl alone.
  const writeBack = hasGit(cfg) ? startWriteBack(cfg, { informers, clock, log, metrics }, work.signal) : undefined;
  let gitopsLoop: GitopsLoop | undefined;
  const autoUpdate = hasGit(cfg) && writeBack
    ? startAutoUpdateProposals(cfg, { kube: kube.port, informers, writeBack, preflight, templateText: (file) => gitopsLoop?.fileText(file), clock, log }, work.signal)
    : undefined;
  const loopStarted = (loop: GitopsLoop): void => {
    gitopsLoop = loop;
    if (autoUpdate) sweepAfterFirstSync(loop, autoUpdate);
  };
  const gitops = hasGit(cfg)
    ? runGitops(cfg, { kube: kube.port, informers, clock, log, metrics, forge: writeBack?.forge }, work.signal, loopStarted).catch((err: unknown) => {
        log.error({ err: err instanceof Error ? err.message : String(err) }, 'GitOps loop stopped');
      })
    : Promise.resolve();

  await abortPromise(work.signal);
  const lost = !shutdown.aborted && !handedOver;
  log.info(lost ? 'leadership lost: stopping all work' : handedOver ? 'handed over: stopping all work' : 'shutting down: stopping work');
  await Promise.all([queue.drain(), plans.drain(), gitops, writeBack?.reporter.stop(), autoUpdate?.stop()]);
  if (elector && !lost) await elector.release().catch((err: unknown) => log.warn({ err: String(err) }, 'could not release the leader lease'));
  // After a handover the process ends; restarted (as the Deployment does), it stands by.
  return finish(lost ? 1 : 0);

  async function finish(code: number): Promise<number> {
    closeAllTalosChannels();
    await closeServers();
    log.info({ code }, 'stopped');
    return code;
  }
}

function abortPromise(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
