// One measured rollout on a scale lab: the controller (compiled dist/ by default, or the sources
// through tsx) drives one plan over every worker; the figures come from /proc, the controller's
// /metrics (heap, Talos calls), the API interposer (its requests, watch events, no-op writes), the
// apiserver's own /metrics, the Talos simulator's record and the observer's watches.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { JobLab } from '../../e2e/support/job-lab.js';
import { labPlan } from '../../e2e/support/plans.js';
import type { WorkingCopy } from '../../lab/forge/working-copy.js';
import { DEFAULT_MEMORY_LIMIT_MIB, controllerEnv } from '../../lab/image-env.js';
import type { Exchange } from '../../lab/cluster/interposer.js';
import type { Observation } from '../../lab/observer.js';
import { waitFor } from '../../lab/wait.js';
import { apiserverRequests, counterDiff, counterSamples, label, noOpWrites, requestKind, tally } from './api-counts.js';
import { FROM_VERSION, PODS_PER_NODE, TO_VERSION } from './fleet.js';
import { probePushesUnderLoad, type PushesUnderLoad } from './push-probe.js';
import { cpuSeconds, labCpuSeconds, sample, type RssSplit } from './sampler.js';

const SOURCES_ENTRY = fileURLToPath(new URL('../../../bin/kangal-patch.js', import.meta.url));

export const pct = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
};
const median = (xs: readonly number[]): number => pct(xs, 50);

/** GET <apiserver>/metrics with the lab admin's certificate. */
export function scrapeApiserver(lab: JobLab): Promise<string> {
  const pki = join(lab.cluster.dir, 'pki');
  const url = new URL('/metrics', lab.cluster.server);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { ca: lab.cluster.caPem, cert: readFileSync(join(pki, 'admin.crt')), key: readFileSync(join(pki, 'admin.key')) },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () =>
          res.statusCode === 200 ? resolve(body) : reject(new Error(`apiserver /metrics: HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const roundedSplit = (s: RssSplit): RssSplit => ({
  rss: Math.round(s.rss),
  anon: Math.round(s.anon),
  file: Math.round(s.file),
  shmem: Math.round(s.shmem),
});

/** A plan's status, read straight from the apiserver (not through the interposer: not the controller's cost). */
export async function planPhase(lab: JobLab, name: string): Promise<string | undefined> {
  const custom = lab.kc.makeApiClient(CustomObjectsApi);
  const plan = (await custom
    .getClusterCustomObject({ group: 'kangalpatch.ozalp.dk', version: 'v1alpha1', plural: 'patchplans', name })
    .catch(() => undefined)) as { status?: { phase?: string } } | undefined;
  return plan?.status?.phase;
}

export interface RolloutFigures {
  workers: number;
  concurrency: number;
  entry: 'dist' | 'sources';
  /** The controller's NODE_OPTIONS as run: the image's, the heap percentage resolved for `memoryLimitMiB` (test/lab/image-env.ts), unless the bench was given others. */
  nodeOptions: string;
  /** The pod memory limit the heap settings were resolved for, MiB. */
  memoryLimitMiB: number;
  /** V8's heap_size_limit under those NODE_OPTIONS on this Node, MiB (old space + young generation). */
  heapLimitMiB: number;
  /**
   * Garbage-collection pauses from plan applied to plan finished (the controller's
   * `nodejs_gc_duration_seconds`, by kind), and per node. Wall-clock pause time: on a loaded machine
   * it includes waiting for a core, so it compares only between runs at a similar load.
   */
  gc: { seconds: number; byKind: Record<string, number>; msPerNode: number };
  /** git push → plan applied while the rollout runs (poll 5 s, no webhook), with the jobs in flight at each push; with the push probe only. */
  pushToAppliedUnderLoadMs?: { p50: number; max: number; samples: number[]; jobsInFlight: number[] };
  /** Environment given to the controller over the image's (test/lab/image-env.ts), e.g. other glibc tunables. */
  env: Record<string, string>;
  phase: string;
  controllerStartSeconds: number;
  peakRssMiB: number;
  /** At the highest RSS sampled: anonymous, file-backed (the node binary) and shared MiB. */
  peakRssSplitMiB: { rss: number; anon: number; file: number; shmem: number };
  peakHeapMiB: number;
  cpuSecondsPerNode: number;
  cpuSecondsStart: number;
  /**
   * Where the machine's cores went from plan applied to plan finished, CPU seconds per node: the
   * controller, the lab's programs, and this process (the simulated kubelets and workloads, the
   * Talos simulator, the observer, the interposer); `coresBusy` is their sum over the span's wall time.
   */
  machineCpu: { perNode: Record<string, number>; coresBusy: number };
  /** The plan's status Preflighting → InProgress, from the controller's own log lines (their `time`). */
  preflightSeconds: number;
  makespanSeconds: number;
  medianNodeSeconds: number;
  makespanRatio: number;
  /** Slot freed (its Lease deleted) → the next slot Lease created, → the next PatchJob created (the goal's figure), → the next PatchJob's phase Pending (its first pass, the job queue's wait included). */
  slotFreedToNextLeaseMs: { p50: number; p99: number; n: number };
  slotFreedToJobCreatedMs: { p50: number; p99: number; n: number };
  slotFreedToNextJobMs: { p50: number; p99: number; n: number };
  /** A PatchJob created → its phase Pending: how long a new job waits for the job queue. */
  jobCreatedToPendingMs: { p50: number; p99: number; n: number };
  readyToCompletedMs: { p50: number; p99: number; n: number };
  /** PatchJob created → Completed or Failed (the observer's watches): what a slot is held for. */
  jobCreatedToEndMs: { p50: number; p99: number; n: number };
  /** Node cordoned → uncordoned (the observer's Node watch): how long each node was out of service. */
  cordonedMs: { p50: number; p99: number; n: number };
  /** The controller's requests per node (interposer), by `VERB resource`. */
  requestsPerNode: Record<string, number>;
  requestsPerNodeTotal: number;
  /** Everything the apiserver served during the rollout (its /metrics), lab kubelets included, per node. */
  apiserverRequestsPerNode: Record<string, number>;
  watchEventsPerNode: number;
  /** TLS connections the controller opened to the apiserver (interposer) / workers: how well it keeps its connections. */
  tlsConnectionsPerNode: number;
  talosCallsPerNode: { simulatorRecord: Record<string, number>; controllerMetrics: Record<string, number> };
  /** Reconcile passes per node by queue (plan, job, …), and the mean wall time of one (awaited I/O included), from the controller's metrics. */
  passesPerNode: Record<string, { passes: number; meanMs: number }>;
  noOpWrites: Record<string, number>;
  evictionsPerNode: number;
  evictionsRejected: number;
  eventsPerNode: number;
  podsPerNode: number;
  violations: string[];
}

const PROBE_POLL = '5s';

/**
 * The push probe, once the rollout is in its stride (a round's worth of jobs Completed, so the
 * slots are full): plan files pushed one after another over the control plane (push-probe.ts).
 */
async function probeOnceRolling(
  lab: JobLab,
  plans: WorkingCopy,
  o: { concurrency: number; pushes: number; timeoutMs: number; since: number },
): Promise<PushesUnderLoad> {
  await waitFor(
    () =>
      lab.observer.events.filter((e) => e.at >= o.since && e.kind === 'jobPhase' && e.detail.endsWith(' Completed'))
        .length >= o.concurrency
        ? true
        : undefined,
    {
      timeoutMs: o.timeoutMs,
      intervalMs: 1000,
      description: 'a round of the rollout Completed',
    },
  );
  return probePushesUnderLoad(lab, plans, {
    pushes: o.pushes,
    node: 'cp-1',
    version: FROM_VERSION,
    prefix: 'busy-push',
  });
}

/** Runs one plan (group `fleet`, `concurrency`) to its end and measures it. */
export async function measureRollout(
  lab: JobLab,
  o: {
    workers: number;
    concurrency: number;
    plan: string;
    entry?: 'dist' | 'sources';
    timeoutMs: number;
    memoryLimitMiB?: number;
    nodeOptions?: string;
    env?: Record<string, string>;
    pushProbe?: { pushes: number };
  },
): Promise<RolloutFigures> {
  const entry = o.entry ?? 'dist';
  const { memoryLimitMiB, env } = rolloutEnv(o);
  const exchangesBefore = exchangeCount(lab);
  const startedAt = Date.now();
  const plans = probePlans(lab, o);
  const controller = lab.startController({
    // With the push probe the controller also polls the plans repository, as a GitOps install does.
    args: ['--log-level', 'info', ...(plans ? lab.gitArgs({ pollInterval: PROBE_POLL }) : [])],
    metrics: true,
    ...(entry === 'sources' ? { entry: SOURCES_ENTRY } : {}),
    env,
  });
  const pid = controller.process.pid;
  await waitFor(() => controller.logs().some((l) => String(l.msg).startsWith('leading')) || undefined, {
    timeoutMs: 600_000,
    intervalMs: 250,
    description: 'controller leading',
  });
  const heapUsed = async (): Promise<number | undefined> => {
    const text = await controller.scrape();
    return [...counterSamples(text, 'kangal_patch_nodejs_heap_size_used_bytes').values()][0];
  };
  const sampler = sample(pid, heapUsed);
  const controllerStartSeconds = (Date.now() - startedAt) / 1000;
  const cpuStart = cpuSeconds(pid);
  const apiBefore = counterSamples(await scrapeApiserver(lab), 'apiserver_request_total');
  const metricsBefore = await controller.scrape();
  const talosBefore = counterSamples(metricsBefore, 'kangal_patch_talos_calls_total');
  const since = Date.now();
  const labCpuAtApply = labCpuSeconds(lab.cluster.dir);
  const tlsAtApply = tlsConnections(lab);
  const controllerCpuAtApply = cpuSeconds(pid);
  const exchangesAtApply = exchangeCount(lab);
  await lab.applyPlan(
    labPlan(
      { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name: o.plan }, spec: {} },
      lab.talos.endpoint,
      {
        target: { talosVersion: TO_VERSION },
        groups: { fleet: { selector: { matchLabels: { 'bench/pool': 'workers' } }, concurrency: o.concurrency } },
        strategy: { order: ['fleet'] },
        nodeSelector: { matchLabels: { 'bench/pool': 'workers' } },
      },
    ),
  );
  const probe =
    plans && o.pushProbe ? probeOnceRolling(lab, plans, { ...o, pushes: o.pushProbe.pushes, since }) : undefined;
  // Awaited after the plan's end; marked handled now so a probe failing first is not an unhandled rejection.
  void probe?.catch(() => undefined);
  const phase = await waitFor(
    async () => {
      const p = await planPhase(lab, o.plan);
      return p === 'Completed' || p === 'Failed' ? p : undefined;
    },
    { timeoutMs: o.timeoutMs, intervalMs: 1000, description: `plan ${o.plan} finished` },
  );
  const spanSeconds = (Date.now() - since) / 1000;
  const labCpuAtEnd = labCpuSeconds(lab.cluster.dir);
  const tlsAtEnd = tlsConnections(lab);
  const cpuEnd = cpuSeconds(pid);
  const pushesUnderLoad = await probe;
  const logAt = (msg: RegExp): number => {
    const time = controller.logs().find((l) => l.plan === o.plan && msg.test(String(l.msg)))?.time;
    return typeof time === 'string' ? Date.parse(time) : NaN;
  };
  const preflightMs = logAt(/^plan InProgress/) - logAt(/^plan Preflighting/);
  const metricsAfter = await controller.scrape();
  const talosAfter = counterSamples(metricsAfter, 'kangal_patch_talos_calls_total');
  const apiAfter = counterSamples(await scrapeApiserver(lab), 'apiserver_request_total');
  await sampler.stop();
  await controller.stop();

  const all = lab.interposer?.exchanges ?? [];
  const during = all.slice(exchangesAtApply);
  const perNode = (m: Map<string, number>): Record<string, number> =>
    Object.fromEntries([...m].map(([k, v]) => [k, Number((v / o.workers).toFixed(3))]));
  const requests = tally(
    during.filter((e) => !/^(WATCH) /.test(requestKind(e.method, e.path))),
    (e) => requestKind(e.method, e.path),
  );
  const watchEvents = all.slice(exchangesBefore).reduce((n, e) => n + (e.watchEvents ?? 0), 0);
  const noOps = tally(noOpWrites(during), (e) => requestKind(e.method, e.path));

  const ev = lab.observer.events.filter((e) => e.at >= since);
  // A node's time T is its job's whole life, PatchJob created → Completed: what the slot is held for
  // (the time before the job's first pass, when workers are busy, included).
  const jobCreated = new Map(ev.filter((e) => e.kind === 'jobCreated').map((e) => [e.detail, e.at]));
  const jobEnds = ev.filter((e) => e.kind === 'jobPhase' && / (Completed|Failed)$/.test(e.detail));
  const jobLives = jobEnds.flatMap((e) => {
    const created = jobCreated.get(e.detail.split(' ')[0] ?? '');
    return created === undefined ? [] : [e.at - created];
  });
  const leaseCreated = ev.filter((e) => e.kind === 'leaseCreated');
  const start = Math.min(...leaseCreated.map((e) => e.at));
  const end = Math.max(...jobEnds.map((e) => e.at));
  const T = median(jobLives);
  const limit = Math.ceil(o.workers / o.concurrency) * T;
  const gaps = slotTurnover(ev);
  const readyToCompleted = jobEnds.flatMap((e) => {
    const ready = ev.filter((x) => x.kind === 'ready' && x.node === e.node && x.at <= e.at).at(-1);
    return ready ? [e.at - ready.at] : [];
  });

  const cordoned = outOfService(ev);

  const talosRecord = lab.talos.callLog().filter((c) => c.at >= since);
  const simulatorRecord = perNode(tally(talosRecord, (c) => c.method));
  const controllerTalos = talosCallsByMethod(talosBefore, talosAfter);

  const violations = rolloutViolations(lab, o, since, during);

  const evictions = during.filter((e) => requestKind(e.method, e.path) === 'POST pods/eviction');
  const events = during.filter((e) => /^POST events(\.events\.k8s\.io)?$/.test(requestKind(e.method, e.path))).length;
  const nodeOptions = env['NODE_OPTIONS'] ?? '';
  return {
    workers: o.workers,
    concurrency: o.concurrency,
    entry,
    nodeOptions,
    memoryLimitMiB,
    heapLimitMiB: heapLimitMiB(nodeOptions),
    gc: gcTime(metricsBefore, metricsAfter, o.workers),
    env: o.env ?? {},
    ...pushFigures(pushesUnderLoad),
    phase,
    controllerStartSeconds,
    peakRssMiB: Math.round(sampler.peakRss()),
    peakRssSplitMiB: roundedSplit(sampler.peakSplit()),
    peakHeapMiB: Math.round(sampler.peakHeap() / 2 ** 20),
    cpuSecondsPerNode: Number(((cpuEnd - controllerCpuAtApply) / o.workers).toFixed(4)),
    cpuSecondsStart: Number(cpuStart.toFixed(2)),
    machineCpu: machineCpu(
      { controller: cpuEnd - controllerCpuAtApply, ...diffCpu(labCpuAtApply, labCpuAtEnd) },
      o.workers,
      spanSeconds,
    ),
    preflightSeconds: Number((preflightMs / 1000).toFixed(2)),
    makespanSeconds: Number(((end - start) / 1000).toFixed(1)),
    medianNodeSeconds: Number((T / 1000).toFixed(2)),
    makespanRatio: Number(((end - start) / limit).toFixed(3)),
    slotFreedToNextLeaseMs: spread(gaps.toLease),
    slotFreedToJobCreatedMs: spread(gaps.toJobCreated),
    slotFreedToNextJobMs: spread(gaps.toPending),
    jobCreatedToPendingMs: spread(gaps.queueWaits),
    readyToCompletedMs: { p50: pct(readyToCompleted, 50), p99: pct(readyToCompleted, 99), n: readyToCompleted.length },
    jobCreatedToEndMs: spread(jobLives),
    cordonedMs: spread(cordoned),
    requestsPerNode: perNode(requests),
    requestsPerNodeTotal: Number(([...requests.values()].reduce((a, b) => a + b, 0) / o.workers).toFixed(2)),
    apiserverRequestsPerNode: perNode(apiserverRequests(counterDiff(apiBefore, apiAfter))),
    watchEventsPerNode: Number((watchEvents / o.workers).toFixed(2)),
    tlsConnectionsPerNode: Number(((tlsAtEnd - tlsAtApply) / o.workers).toFixed(3)),
    talosCallsPerNode: { simulatorRecord, controllerMetrics: perNode(controllerTalos) },
    passesPerNode: passesPerNode(metricsBefore, metricsAfter, o.workers),
    noOpWrites: Object.fromEntries(noOps),
    evictionsPerNode: Number((evictions.filter((e) => e.status < 300).length / o.workers).toFixed(2)),
    evictionsRejected: evictions.filter((e) => e.status === 429).length,
    eventsPerNode: Number((events / o.workers).toFixed(2)),
    podsPerNode: PODS_PER_NODE,
    violations,
  };
}

/** The controller's requests so far, as the interposer recorded them (0 without one). */
const exchangeCount = (lab: JobLab): number => lab.interposer?.exchanges.length ?? 0;

/** TLS connections the controller opened to the interposer so far (0 without one). */
const tlsConnections = (lab: JobLab): number => lab.interposer?.tlsConnections() ?? 0;

/** The lab's plans repository when the push probe runs (it needs one), else undefined. */
function probePlans(lab: JobLab, o: { pushProbe?: { pushes: number } }): WorkingCopy | undefined {
  const plans = o.pushProbe ? lab.plans : undefined;
  if (o.pushProbe && !plans) throw new Error('the push probe needs the lab plans repository');
  return plans;
}

/** kangal_patch_talos_calls_total between two scrapes, by method. */
function talosCallsByMethod(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const byMethod = new Map<string, number>();
  for (const [labels, n] of counterDiff(before, after)) {
    const method = /method="([^"]*)"/.exec(labels)?.[1] ?? '?';
    byMethod.set(method, (byMethod.get(method) ?? 0) + n);
  }
  return byMethod;
}

/**
 * What the rollout must not have done, from the observer and the interposer: more slots than the
 * concurrency, a worker cordoned or booted other than once, left cordoned or not on the target,
 * version skew, a pod deleted without the eviction API.
 */
function rolloutViolations(
  lab: JobLab,
  o: { plan: string; concurrency: number; workers: number },
  since: number,
  during: readonly Exchange[],
): string[] {
  const violations: string[] = [];
  const peak = lab.observer.maxConcurrentLeasesInGroup(o.plan, 'fleet');
  if (peak > o.concurrency)
    violations.push(`${peak} slot Leases at once in group fleet (concurrency ${o.concurrency})`);
  const workers = Array.from({ length: o.workers }, (_, i) => `worker-${i + 1}`);
  for (const node of workers) violations.push(...workerViolations(lab, node, since));
  violations.push(...lab.observer.skewViolations);
  const directDeletes = during.filter((e) => requestKind(e.method, e.path) === 'DELETE pods').length;
  if (directDeletes > 0) violations.push(`${directDeletes} pods deleted without the eviction API`);
  return violations;
}

/** A worker since the plan was applied: cordoned once, booted once, given back, on the target. */
function workerViolations(lab: JobLab, node: string, since: number): string[] {
  const violations: string[] = [];
  const of = lab.observer.of(node).filter((e) => e.at >= since);
  const cordons = of.filter((e) => e.kind === 'cordoned').length;
  const boots = of.filter((e) => e.kind === 'booted').length;
  if (cordons !== 1) violations.push(`${node} cordoned ${cordons} times`);
  if (boots !== 1) violations.push(`${node} booted ${boots} times`);
  if (lab.observer.node(node)?.unschedulable) violations.push(`${node} left cordoned`);
  if (!lab.observer.node(node)?.osImage.includes(TO_VERSION)) violations.push(`${node} not on ${TO_VERSION}`);
  return violations;
}

/** The push probe's figures, when it ran. */
function pushFigures(pushesUnderLoad: PushesUnderLoad | undefined): Pick<RolloutFigures, 'pushToAppliedUnderLoadMs'> {
  return pushesUnderLoad
    ? {
        pushToAppliedUnderLoadMs: {
          p50: pct(pushesUnderLoad.samples, 50),
          max: Math.max(...pushesUnderLoad.samples),
          samples: pushesUnderLoad.samples,
          jobsInFlight: pushesUnderLoad.inFlight,
        },
      }
    : {};
}

/**
 * The controller's environment: the image's (test/lab/image-env.ts) as a pod with `memoryLimitMiB`
 * (default the Deployment's) runs it, so the figures are what ships; `nodeOptions` replaces the
 * shipped NODE_OPTIONS, `env` adds to it.
 */
function rolloutEnv(o: { memoryLimitMiB?: number; nodeOptions?: string; env?: Record<string, string> }): {
  memoryLimitMiB: number;
  env: Record<string, string>;
} {
  const memoryLimitMiB = o.memoryLimitMiB ?? DEFAULT_MEMORY_LIMIT_MIB;
  return {
    memoryLimitMiB,
    env: {
      ...controllerEnv({ memoryLimitMiB, ...(o.nodeOptions !== undefined ? { nodeOptions: o.nodeOptions } : {}) }),
      ...o.env,
    },
  };
}

/** kangal_patch_nodejs_gc_duration_seconds between two scrapes, by kind, and per node. */
function gcTime(before: string, after: string, workers: number): RolloutFigures['gc'] {
  const metric = 'kangal_patch_nodejs_gc_duration_seconds_sum';
  const byKind = new Map<string, number>();
  for (const [labels, seconds] of counterDiff(counterSamples(before, metric), counterSamples(after, metric)))
    byKind.set(label(labels, 'kind'), (byKind.get(label(labels, 'kind')) ?? 0) + seconds);
  const seconds = [...byKind.values()].reduce((a, b) => a + b, 0);
  return {
    seconds: Number(seconds.toFixed(2)),
    byKind: Object.fromEntries([...byKind].map(([k, v]) => [k, Number(v.toFixed(2))])),
    msPerNode: Number(((seconds * 1000) / workers).toFixed(1)),
  };
}

/** V8's heap_size_limit with NODE_OPTIONS=`nodeOptions` on this Node, MiB. */
function heapLimitMiB(nodeOptions: string): number {
  const r = spawnSync(
    process.execPath,
    ['-e', 'process.stdout.write(String(require("node:v8").getHeapStatistics().heap_size_limit))'],
    { env: { ...process.env, NODE_OPTIONS: nodeOptions }, encoding: 'utf8' },
  );
  return r.status === 0 ? Math.round(Number(r.stdout) / 2 ** 20) : NaN;
}

/** kangal_patch_reconcile_duration_seconds between two scrapes, summed over results, by controller. */
function passesPerNode(
  before: string,
  after: string,
  workers: number,
): Record<string, { passes: number; meanMs: number }> {
  const byController = (metric: string): Map<string, number> => {
    const out = new Map<string, number>();
    for (const [labels, n] of counterDiff(counterSamples(before, metric), counterSamples(after, metric)))
      out.set(label(labels, 'controller'), (out.get(label(labels, 'controller')) ?? 0) + n);
    return out;
  };
  const seconds = byController('kangal_patch_reconcile_duration_seconds_sum');
  return Object.fromEntries(
    [...byController('kangal_patch_reconcile_duration_seconds_count')].map(([c, n]) => [
      c,
      { passes: Number((n / workers).toFixed(2)), meanMs: Number((((seconds.get(c) ?? 0) / n) * 1000).toFixed(1)) },
    ]),
  );
}

/** Slot freed (its Lease deleted) → the next Lease, PatchJob created and PatchJob Pending, while nodes were still waiting; and each job's created → Pending. */
function slotTurnover(ev: readonly Observation[]): {
  toLease: number[];
  toJobCreated: number[];
  toPending: number[];
  queueWaits: number[];
} {
  const times = (kind: string, detail: (d: string) => boolean = () => true): number[] =>
    ev
      .filter((e) => e.kind === kind && detail(e.detail))
      .map((e) => e.at)
      .sort((a, b) => a - b);
  const freed = times('leaseDeleted');
  const gapsTo = (next: number[]): number[] =>
    freed.flatMap((at) => {
      const first = next.find((c) => c >= at);
      return first !== undefined && at < (next.at(-1) ?? 0) ? [first - at] : [];
    });
  const pendingOf = new Map(
    ev.filter((e) => e.kind === 'jobPhase' && e.detail.endsWith(' Pending')).map((e) => [e.node, e.at]),
  );
  const queueWaits = ev
    .filter((e) => e.kind === 'jobCreated')
    .flatMap((e) => {
      const pending = pendingOf.get(e.node);
      return pending === undefined ? [] : [pending - e.at];
    });
  return {
    toLease: gapsTo(times('leaseCreated')),
    toJobCreated: gapsTo(times('jobCreated')),
    toPending: gapsTo(times('jobPhase', (d) => d.endsWith(' Pending'))),
    queueWaits,
  };
}

/** Each cordon's time until the node's next uncordon (a node still cordoned at the end is not counted: the observer reports it as a violation). */
function outOfService(ev: readonly Observation[]): number[] {
  const since = new Map<string, number>();
  const spans: number[] = [];
  for (const e of ev) {
    if (e.kind === 'cordoned') since.set(e.node, e.at);
    if (e.kind !== 'uncordoned') continue;
    const at = since.get(e.node);
    if (at !== undefined) spans.push(e.at - at);
    since.delete(e.node);
  }
  return spans;
}

function spread(values: readonly number[]): { p50: number; p99: number; n: number } {
  return { p50: pct(values, 50), p99: pct(values, 99), n: values.length };
}

function diffCpu(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after).map(([program, seconds]) => [
      program === 'self' ? 'lab simulators and observer' : program,
      seconds - (before[program] ?? 0),
    ]),
  );
}

function machineCpu(
  seconds: Record<string, number>,
  workers: number,
  spanSeconds: number,
): RolloutFigures['machineCpu'] {
  const total = Object.values(seconds).reduce((a, b) => a + b, 0);
  return {
    perNode: Object.fromEntries(
      Object.entries(seconds).map(([program, s]) => [program, Number((s / workers).toFixed(4))]),
    ),
    coresBusy: Number((total / spanSeconds).toFixed(2)),
  };
}
