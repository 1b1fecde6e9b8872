// The composition of controller/kube: one KubeConfig → the KubePort, the informers, the leader
// Lease store and an apiserver readiness probe. Nothing client-node-typed leaves this folder.
import { Health, type KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../runtime/clock.js';
import type { OpContext } from '../runtime/context.js';
import type { LeaderLeaseStore } from '../runtime/leader.js';
import { silentLog, type LogFn } from '../runtime/log.js';
import { OutcomeError, OutcomeKind } from '../runtime/outcome.js';
import { makeClients, type KubeClients } from './clients.js';
import { makeObjectSource, type ObjectSource } from './dynamic.js';
import { impersonating, loadKubeConfig } from './config.js';
import { networkFailure, toOutcomeError } from './errors.js';
import { eventEmitter } from './events.js';
import { annotatePlan, applyPlan, deletePlan, removePlanFinalizer } from './gitops-plans.js';
import { makeInformers, type KubeInformerSet } from './informers.js';
import { leaderLeaseStore } from './leader-lease.js';
import { createSlotLease, deleteLease, readLease } from './leases.js';
import { readKubeProxy } from './daemonsets.js';
import { createHookJob, readHookJob } from './hook-jobs.js';
import { cordonNode, readNode, uncordonNode } from './nodes.js';
import { createPatchJob, writeJobStatus } from './patchjobs.js';
import { deletePatchJob, pausePlan, writePlanStatus } from './patchplans.js';
import { deletePod, evictPod, listPodsOnNode, listStaticPods, matchingPdbs } from './pods.js';
import { listVolumeAttachmentsOf } from './volume-attachments.js';
import type { KubeInformers, KubePort } from './port.js';
import { readSecret, watchedSecrets, type WatchedSecrets } from './secrets.js';
import { DEFAULT_HOOKS_NAMESPACE } from '../../schemas/api.js';

export interface CreateKubeOptions {
  /** A kubeconfig path; undefined: in-cluster, else $KUBECONFIG or ~/.kube/config (kube/config.ts). */
  kubeconfig?: string | undefined;
  /** Where slot Leases (and the leader Lease) live. */
  operatorNamespace: string;
  /** Where hook Jobs run (default kangal-patch-hooks): the hook Job and pod informers watch it. */
  hooksNamespace?: string | undefined;
  clock: Clock;
  logger?: LogFn;
  /** reportingInstance of Events: the pod name, usually. */
  reportingInstance?: string;
  /** Informer full re-list interval (default 5 min). */
  resyncMs?: number;
  informerBackoff?: { initialMs?: number; maxMs?: number };
  /** The user health checks read as (impersonated, e.g. `system:serviceaccount:kangal-patch:kangal-patch-health`):
   *  a check sees what that identity is granted, never the controller's own rights. Unset: the controller's identity (tests of the adapter only). */
  healthCheckUser?: string;
}

export interface Kube {
  port: KubePort;
  informers: KubeInformers & KubeInformerSet;
  /** Starts every informer (not the node pod watches: informers.nodePods.open); they stop when `signal` aborts. */
  startInformers(signal: AbortSignal): void;
  /** Resolves once every informer has stored its first list. */
  synced(): Promise<void>;
  /** The store behind leader election (runtime/leader.ts). */
  leaderLease(name: string, namespace?: string): LeaderLeaseStore;
  /** GET /readyz of the apiserver: true when it answers 200. Network failures throw OutcomeError. */
  readyz(ctx: OpContext): Promise<boolean>;
  /** The server URL, for logs and preflight messages. */
  server: string;
  /** Objects of any kind (health checks): discovery, informers, access reviews. */
  objects: ObjectSource;
}

export function createKube(opts: CreateKubeOptions): Kube {
  return createKubeFromConfig(loadKubeConfig({ kubeconfigPath: opts.kubeconfig }), opts);
}

/** For callers that already hold a KubeConfig (tests). */
export function createKubeFromConfig(kubeConfig: KubeConfig, opts: CreateKubeOptions): Kube {
  const log = opts.logger ?? silentLog;
  const c = makeClients(kubeConfig);
  const informers = makeInformers(c, {
    kubeConfig,
    clock: opts.clock,
    log,
    operatorNamespace: opts.operatorNamespace,
    hooksNamespace: opts.hooksNamespace ?? DEFAULT_HOOKS_NAMESPACE,
    resyncMs: opts.resyncMs,
    backoff: opts.informerBackoff,
  });
  const sink = { reportingInstance: opts.reportingInstance ?? 'kangal-patch', log };
  const secrets = watchedSecrets(c, {
    kubeConfig,
    namespace: opts.operatorNamespace,
    clock: opts.clock,
    log,
    resyncMs: opts.resyncMs,
    backoff: opts.informerBackoff,
  });
  // The node pod watches are not among them: the job wiring opens them while it leads.
  const all = [
    informers.nodes,
    informers.staticPods,
    informers.hookPods,
    informers.slotLeases,
    informers.patchJobs,
    informers.patchPlans,
    informers.pdbs,
    informers.volumeAttachments,
    informers.kubeProxy,
    informers.hookJobs,
  ];
  return {
    port: makePort(c, sink, kubeConfig, secrets),
    informers,
    startInformers: (signal) => {
      all.forEach((i) => i.start(signal));
      secrets.start(signal);
    },
    synced: async () => {
      await Promise.all(all.map((i) => i.synced));
    },
    leaderLease: (name, namespace = opts.operatorNamespace) => leaderLeaseStore(c, namespace, name),
    readyz: (ctx) => readyz(kubeConfig, ctx),
    server: kubeConfig.getCurrentCluster()?.server ?? '',
    objects: healthObjectSource(kubeConfig, c, opts, log),
  };
}

function healthObjectSource(kubeConfig: KubeConfig, c: KubeClients, opts: CreateKubeOptions, log: LogFn): ObjectSource {
  const settings = { clock: opts.clock, log, resyncMs: opts.resyncMs };
  if (opts.healthCheckUser === undefined) return makeObjectSource(kubeConfig, c, settings);
  const as = impersonating(kubeConfig, opts.healthCheckUser);
  return makeObjectSource(as, makeClients(as), settings);
}

function makePort(
  c: KubeClients,
  sink: { reportingInstance: string; log: LogFn },
  kubeConfig: KubeConfig,
  secrets: WatchedSecrets,
): KubePort {
  const emitEvent = eventEmitter(c, sink);
  return {
    cordon: (ctx, node, job) => cordonNode(c, ctx, node, job),
    uncordon: (ctx, node, job) => uncordonNode(c, ctx, node, job),
    readNode: (ctx, name) => readNode(c, ctx, name),
    listPodsOnNode: (ctx, node) => listPodsOnNode(c, ctx, node),
    listStaticPods: (ctx, component) => listStaticPods(c, ctx, component),
    listVolumeAttachments: (ctx, nodeName) => listVolumeAttachmentsOf(c, ctx, nodeName),
    evictPod: (ctx, pod) => evictPod(c, ctx, pod),
    deletePod: (ctx, pod) => deletePod(c, ctx, pod),
    matchingPdbs: (ctx, pod) => matchingPdbs(c, ctx, pod),
    createSlotLease: (ctx, lease) => createSlotLease(c, ctx, lease),
    deleteLease: (ctx, namespace, name, resourceVersion) => deleteLease(c, ctx, { namespace, name, resourceVersion }),
    readLease: (ctx, ns, name) => readLease(c, ctx, ns, name),
    createPatchJob: (ctx, job) => createPatchJob(c, ctx, job),
    createHookJob: (ctx, ns, job) => createHookJob(c, ctx, ns, job),
    readHookJob: (ctx, ns, name) => readHookJob(c, ctx, ns, name),
    readKubeProxy: (ctx) => readKubeProxy(c, ctx),
    writeJobStatus: (ctx, job, status) => writeJobStatus(c, ctx, job, status),
    deletePatchJob: (ctx, name) => deletePatchJob(c, ctx, name),
    writePlanStatus: (ctx, plan, status) => writePlanStatus(c, ctx, plan, status),
    pausePlan: (ctx, plan) => pausePlan(c, ctx, plan),
    applyPlan: (ctx, plan) => applyPlan(c, ctx, plan),
    deletePlan: (ctx, name, uid) => deletePlan(c, ctx, name, uid),
    annotatePlan: (ctx, name, annotations) => annotatePlan(c, ctx, name, annotations),
    removePlanFinalizer: (ctx, plan, finalizer) => removePlanFinalizer(c, ctx, plan, finalizer),
    apiserverReady: (ctx) => readyz(kubeConfig, ctx),
    readSecret: (ctx, ns, name) => readSecret(c, ctx, ns, name),
    readOperatorSecret: (ctx, name) => secrets.read(ctx, name),
    emitEvent,
  };
}

async function readyz(kubeConfig: KubeConfig, ctx: OpContext): Promise<boolean> {
  const timeout = AbortSignal.timeout(Math.max(1, Math.min(ctx.deadline - ctx.clock.now(), 2 ** 31 - 1)));
  const signal = AbortSignal.any([ctx.signal, timeout]);
  try {
    // Health.check answers false for any status but 200 (and falls back to /healthz on 404).
    return await new Health(kubeConfig).readyz({ signal });
  } catch (err) {
    const mapped = toOutcomeError(err, {
      what: 'GET /readyz',
      signal: ctx.signal,
      deadlineExceeded: timeout.aborted,
      now: ctx.clock.now(),
    });
    // Health replaces every network error with a plain Error ("Error occurred in health request");
    // since client-node 2.0 the original is its `cause`.
    if (mapped.reason !== 'Unexpected') throw mapped;
    const why = networkFailure((err as { cause?: unknown } | null)?.cause);
    const server = kubeConfig.getCurrentCluster()?.server ?? '?';
    throw new OutcomeError({
      kind: OutcomeKind.Transient,
      reason: 'NetworkError',
      message: `GET /readyz on ${server}: no answer${why ? ` (${why})` : ''}`,
      cause: err,
    });
  }
}
