// `npm run bench -- hostile`: what a hostile plan costs everyone else, through the real
// `kangal-patch run` process. Two rounds on one lab, each with a fresh controller:
//   quiet:   a benign plan over BENIGN nodes alone (concurrency 2);
//   hostile: the same plan beside a plan whose health check nests three comprehensions over a
//            ConfigMap of 100 keys (10^6 steps per evaluation) that changes every 100 ms, so every
//            change is evaluated again, each up to its cost budget.
// Printed for each: /healthz latency p50/p99/max (sampled every 20 ms over the rollout; goal p99 ≤ 100
// ms) and the benign plan's makespan (its PatchJobs' first cordon → last uncordon, from the observer).
// Then: the controller's CPU over 30 s while its only plan waits on a 30-day timer (retention of a
// completed plan; goal < 1 % of a core).
import { CoreV1Api } from '@kubernetes/client-node';
import { startJobLab, type Controller, type JobLab } from '../e2e/support/job-lab.js';
import { grantHealthReads } from '../e2e/support/health-identity.js';
import { labPlan } from '../e2e/support/plans.js';
import { waitFor } from '../lab/wait.js';
import { recordResult } from './results.js';
import { cpuSeconds } from './scale/sampler.js';

const BENIGN = 5;
const POOL = 'bench/pool';
const TIMINGS = { upgradeMs: 300, shutdownMs: 100, rebootMs: 300, bootMs: 200, pullMs: 0, installMs: 0 };
const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)] ?? NaN;

const plan = (
  name: string,
  pool: string,
  spec: Record<string, unknown>,
  endpoint: string,
): ReturnType<typeof labPlan> =>
  labPlan({ apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name }, spec: {} }, endpoint, {
    target: { talosVersion: 'v1.13.2' },
    strategy: { order: ['workers'], groups: { workers: { concurrency: 2 } } },
    nodeSelector: { matchLabels: { [POOL]: pool } },
    ...spec,
  });

async function healthzPort(c: Controller): Promise<number> {
  return waitFor(() => c.logs().find((l) => l['msg'] === 'health probes listening')?.['port'] as number | undefined, {
    timeoutMs: 60_000,
    description: 'health probes listening',
  });
}

/** /healthz every 20 ms until `stop` aborts: each answer's latency in ms (a request unanswered in 5 s counts 5,000). */
async function sampleHealthz(port: number, stop: AbortSignal): Promise<number[]> {
  const out: number[] = [];
  while (!stop.aborted) {
    const t = performance.now();
    await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5000) }).then(
      (r) => r.arrayBuffer(),
      () => undefined,
    );
    out.push(performance.now() - t);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return out;
}

async function round(lab: JobLab, name: string, hostile: boolean): Promise<{ healthz: number[]; makespanMs: number }> {
  const controller = lab.startController({ args: ['--log-level', 'info'], name: `controller-${name}` });
  const port = await healthzPort(controller);
  await waitFor(() => controller.logs().some((l) => String(l['msg']).startsWith('leading')) || undefined, {
    timeoutMs: 60_000,
    description: 'controller leading',
  });
  const stop = new AbortController();
  const churn = hostile ? churnConfigMap(lab, stop.signal) : Promise.resolve();
  if (hostile) {
    await lab.applyPlan(
      plan(
        `${name}-bomb`,
        'hostile',
        {
          healthChecks: [
            {
              name: 'bomb',
              apiVersion: 'v1',
              kind: 'ConfigMap',
              namespace: 'bench',
              objectName: 'wide',
              expr: 'data.all(a, data.all(b, data.all(c, a + b + c != "")))',
              timeout: '1h',
              when: 'beforeRollout',
            },
          ],
        },
        lab.talos.endpoint,
      ),
    );
    await lab.waitForPlan(
      `${name}-bomb`,
      'the hostile plan over its budget',
      (s) => typeof s['message'] === 'string' && s['message'].includes('over its cost budget'),
      120_000,
    );
  }
  const sampling = sampleHealthz(port, stop.signal);
  const first = lab.observer.events.length;
  await lab.applyPlan(plan(name, `benign-${name}`, {}, lab.talos.endpoint));
  await lab.waitForPlan(name, 'Completed', (s) => s['phase'] === 'Completed' || s['phase'] === 'Failed', 10 * 60_000);
  stop.abort();
  const healthz = await sampling;
  await churn;
  const mine = lab.observer.events.slice(first).filter((e) => e.kind === 'cordoned' || e.kind === 'uncordoned');
  const makespanMs = (mine.at(-1)?.at ?? NaN) - (mine[0]?.at ?? NaN);
  await controller.stop();
  return { healthz, makespanMs };
}

async function churnConfigMap(lab: JobLab, stop: AbortSignal): Promise<void> {
  const core = lab.kc.makeApiClient(CoreV1Api);
  for (let i = 0; !stop.aborted; i++) {
    await core
      .patchNamespacedConfigMap({ namespace: 'bench', name: 'wide', body: { data: { k0: String(i) } } })
      .catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export async function run(): Promise<void> {
  // Each round's benign plan has nodes of its own (a node upgraded once stays on the target).
  const pools = [
    ...Array<string>(BENIGN).fill('benign-quiet'),
    ...Array<string>(BENIGN).fill('benign-hostile'),
    'hostile',
    'retained',
  ];
  const labels: Record<string, Record<string, string>> = Object.fromEntries(
    pools.map((pool, i) => [`worker-${i + 1}`, { [POOL]: pool }]),
  );
  const lab = await startJobLab({
    fleet: { nodes: 2 * BENIGN + 3, controlPlanes: 1, talosVersion: 'v1.12.4' },
    labels,
    timings: TIMINGS,
    images: ['siderolabs/installer:v1.13.2'],
  });
  try {
    const core = lab.kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'bench' } } });
    await core.createNamespacedConfigMap({
      namespace: 'bench',
      body: {
        metadata: { name: 'wide' },
        data: Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, `${i}`])),
      },
    });
    await grantHealthReads(lab.kc, 'bench-hostile-reads', ['configmaps']);

    const quiet = await round(lab, 'quiet', false);
    const hostile = await round(lab, 'hostile', true);
    const line = (what: string, r: { healthz: number[]; makespanMs: number }): string =>
      `${what}: /healthz p50 ${pct(r.healthz, 50).toFixed(1)} ms, p99 ${pct(r.healthz, 99).toFixed(1)} ms, max ${Math.max(...r.healthz).toFixed(1)} ms over ${r.healthz.length} requests (goal p99 ≤ 100 ms); benign makespan ${(r.makespanMs / 1000).toFixed(1)} s`;
    console.log(line('benign plan alone', quiet));
    console.log(line('beside a hostile expression', hostile));

    // A completed plan waits 30 days for its retention: the controller's CPU meanwhile.
    const controller = lab.startController({ args: ['--log-level', 'info'], name: 'controller-retained' });
    await lab.applyPlan(plan('retained', 'retained', { retention: { history: '720h' } }, lab.talos.endpoint));
    await lab.waitForPlan('retained', 'Completed', (s) => s['phase'] === 'Completed', 5 * 60_000);
    // The rollout's last acts after Completed: the node uncordoned and its slot Lease deleted.
    const retainedNode = `worker-${pools.length}`;
    await waitFor(
      () =>
        (lab.observer.liveLeases().length === 0 && lab.observer.node(retainedNode)?.unschedulable === false) ||
        undefined,
      { timeoutMs: 60_000, description: `${retainedNode} released` },
    );
    const pid = controller.process.pid;
    const cpu0 = cpuSeconds(pid);
    const windowS = 30;
    await new Promise((resolve) => setTimeout(resolve, windowS * 1000));
    const idleCpu = (cpuSeconds(pid) - cpu0) / windowS;
    await controller.stop();
    console.log(
      `waiting on a 30-day retention timer: controller CPU ${(idleCpu * 100).toFixed(2)} % of a core over ${windowS} s (goal < 1 %)`,
    );
    console.log(
      `results: ${recordResult('hostile', {
        quiet: {
          healthzP50Ms: pct(quiet.healthz, 50),
          healthzP99Ms: pct(quiet.healthz, 99),
          makespanS: quiet.makespanMs / 1000,
        },
        hostile: {
          healthzP50Ms: pct(hostile.healthz, 50),
          healthzP99Ms: pct(hostile.healthz, 99),
          makespanS: hostile.makespanMs / 1000,
        },
        retentionWaitCpuPercent: idleCpu * 100,
      })}`,
    );
  } finally {
    await lab.stop();
  }
}
