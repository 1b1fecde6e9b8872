// `npm run chaos:soak -- [--minutes 20] [--plan-every 180] [--seed S]`: one controller on a 40-node
// fleet for the whole time, a new plan (the next Talos patch release) every few minutes once the
// last one completed, and a random outage (drawn from the seed) every 30–90 s: kube-apiserver or
// etcd restarted, the controller's apiserver connection cut, a 429/500 storm on its writes, the
// Talos endpoint down. Every 30 s the controller's own /metrics are sampled (resident memory, heap,
// open file descriptors, active handles, event-loop lag p99); the table at the end shows whether
// they stay flat. Each plan must complete with one upgrade per node (the simulator's record).
import { parseArgs } from 'node:util';
import { setTimeout as delay } from 'node:timers/promises';
import fc from 'fast-check';
import { startJobLab, TALOS_SECRET, type JobLab } from '../e2e/support/job-lab.js';
import { controllerEnv } from '../lab/image-env.js';
import { tcpProxy } from '../lab/tcp-proxy.js';
import { waitFor } from '../lab/wait.js';
import { mochaHooks } from '../support/global-hooks.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '20' },
    'plan-every': { type: 'string', default: '180' },
    seed: { type: 'string', default: '1' },
  },
});
const durationMs = Number(values.minutes) * 60_000;
const planEveryMs = Number(values['plan-every']) * 1000;
const seed = Number(values.seed);
const NODES = 40;
const PLANS = Math.ceil(durationMs / planEveryMs) + 1;
const target = (k: number): string => `v1.13.${2 + k}`;

type Outage = 'apiserver-restart' | 'etcd-restart' | 'connection-cut' | 'write-storm' | 'talos-down';
const outages = fc.sample(
  fc.record({
    kind: fc.constantFrom<Outage>('apiserver-restart', 'etcd-restart', 'connection-cut', 'write-storm', 'talos-down'),
    gapMs: fc.integer({ min: 30_000, max: 90_000 }),
    downMs: fc.integer({ min: 1_000, max: 5_000 }),
  }),
  { seed, numRuns: 200 },
);

const metric = (text: string, name: string): number =>
  Number(new RegExp(`^kangal_patch_${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text)?.[1] ?? NaN);

interface Sample {
  minute: number;
  rssMiB: number;
  heapMiB: number;
  fds: number;
  handles: number;
  lagP99Ms: number;
  plansDone: number;
}

function row(s: Sample): string {
  return `| ${s.minute.toFixed(1)} | ${s.rssMiB.toFixed(0)} | ${s.heapMiB.toFixed(0)} | ${s.fds} | ${s.handles} | ${s.lagP99Ms.toFixed(1)} | ${s.plansDone} |`;
}

async function outage(lab: JobLab, kind: Outage, downMs: number, talos: { down: boolean }): Promise<void> {
  if (kind === 'apiserver-restart') return lab.cluster.restart('kube-apiserver', { downMs });
  if (kind === 'etcd-restart') return lab.cluster.restart('etcd', { downMs });
  const i = lab.interposer!;
  if (kind === 'connection-cut') i.cut();
  let n = 0;
  if (kind === 'write-storm')
    i.setBeforeForward((req) =>
      req.method !== 'GET' && n++ % 2 === 0 ? { status: n % 4 === 1 ? 429 : 500, retryAfterSeconds: 1 } : undefined,
    );
  if (kind === 'talos-down') talos.down = true;
  await delay(downMs);
  i.restore();
  i.setBeforeForward(undefined);
  talos.down = false;
}

const lab = await startJobLab({
  fleet: { nodes: NODES, controlPlanes: 3, talosVersion: 'v1.13.1' },
  images: Array.from({ length: PLANS }, (_, k) => `siderolabs/installer:${target(k)}`),
  workloads: [{ namespace: 'shop', name: 'web', kind: 'replicaset', replicas: 20, pdb: { maxUnavailable: 1 } }],
  interposer: true,
});
const talos = await tcpProxy(lab.talos.endpoint);
const started = Date.now();
const samples: Sample[] = [];
const problems: string[] = [];
let plansDone = 0;
/** Plans after which every node had exactly one upgrade per plan so far (the simulator's record). */
let plansOneUpgradeEach = 0;
let faults = 0;
let stop = false;
const ending = new AbortController();
/** A pause of the soak's schedule that ends early when the soak does. */
const pause = (ms: number): Promise<void> => delay(ms, undefined, { signal: ending.signal }).catch(() => undefined);
try {
  // The image's environment, heap as a pod with the Deployment's memory limit has it (test/lab/image-env.ts): the memory curve is the shipped one's.
  const controller = lab.startController({ metrics: true, env: controllerEnv() });
  const sampler = (async () => {
    while (!stop) {
      const text = await controller.scrape().catch(() => '');
      if (text) {
        const sample: Sample = {
          minute: (Date.now() - started) / 60_000,
          rssMiB: metric(text, 'process_resident_memory_bytes') / 2 ** 20,
          heapMiB: metric(text, 'nodejs_heap_size_used_bytes') / 2 ** 20,
          fds: metric(text, 'process_open_fds'),
          handles: metric(text, 'nodejs_active_handles_total'),
          lagP99Ms: metric(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
          plansDone,
        };
        samples.push(sample);
        // Printed as it is taken too, so a soak that ends early still shows its curve.
        console.log(`sample ${row(sample)}`);
      }
      await pause(30_000);
    }
  })();
  const chaos = (async () => {
    for (const o of outages) {
      await pause(o.gapMs);
      if (stop) return;
      faults++;
      await outage(lab, o.kind, o.downMs, talos);
    }
  })();
  // At most PLANS plans: the lab holds that many installer images (a plan past them would wait out its preflight).
  for (let k = 0; k < PLANS && Date.now() - started < durationMs; k++) {
    const planStart = Date.now();
    const name = `soak-${k}`;
    const doc = {
      apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
      kind: 'PatchPlan',
      metadata: { name },
      spec: {
        target: { talosVersion: target(k) },
        groups: { controlPlane: { concurrency: 1 }, workers: { concurrency: 4 } },
        delayBetweenNodes: '0s',
        talosConfig: { endpoints: [talos.endpoint], secretRef: { name: TALOS_SECRET } },
      },
    };
    // The apiserver may be down for one of the outages right now (a create refused at the first
    // soak run's minute 21): apply until the plan exists, as a person would retry kubectl apply.
    await waitFor(async () => (await lab.plan(name)) ?? (await lab.applyPlan(doc), lab.plan(name)), {
      timeoutMs: 120_000,
      intervalMs: 1000,
      description: `PatchPlan ${name} applied`,
    });
    // A preflight that failed during an outage is retried a minute later (phase Failed, reason Preflight*): not the end.
    // A plan that never gets there is a problem of the soak, reported with the curve, not a crash.
    const st: Record<string, unknown> = await lab
      .waitForPlan(
        name,
        'Completed',
        (s) => s['phase'] === 'Completed' || (s['phase'] === 'Failed' && !String(s['reason']).startsWith('Preflight')),
        planEveryMs * 3,
      )
      .catch(async (err: unknown) => ({
        ...((await lab.plan(name).catch(() => undefined))?.status ?? {}),
        phase: `not Completed (${(err as Error).message.split(';')[0] ?? ''})`,
      }));
    if (st['phase'] !== 'Completed') problems.push(`${name} ended ${String(st['phase'])}: ${String(st['message'])}`);
    plansDone++;
    let oneEach = true;
    for (let i = 0; i < NODES; i++) {
      const node = i < 3 ? `cp-${i + 1}` : `worker-${i - 2}`;
      if (lab.talos.node(node).upgradesStarted === k + 1) continue;
      oneEach = false;
      problems.push(`${name}: ${node} has ${lab.talos.node(node).upgradesStarted} upgrades after ${k + 1} plans`);
    }
    if (oneEach) plansOneUpgradeEach++;
    console.log(
      `${name} → ${target(k)}: ${String(st['phase'])} in ${((Date.now() - planStart) / 1000).toFixed(0)} s (${faults} outages so far)`,
    );
    const wait = planStart + planEveryMs - Date.now();
    if (wait > 0 && Date.now() - started + wait < durationMs) await delay(wait);
  }
  stop = true;
  ending.abort();
  await Promise.all([sampler, chaos]);
  await controller.stop();
} finally {
  stop = true;
  ending.abort();
  await talos.close();
  // The secrets scan runs in stop(): a leak is a problem of the soak, printed with the rest.
  await lab.stop().catch((err: unknown) => problems.push((err as Error).message));
  await mochaHooks.afterAll();
}

console.log(
  `\nsoak: ${NODES} nodes, ${plansDone} plans, ${faults} outages, ${((Date.now() - started) / 60_000).toFixed(1)} min, seed ${seed}`,
);
console.log(`one upgrade per node per plan (simulator's record): ${plansOneUpgradeEach} of ${plansDone} plans`);
console.log('| minute | RSS MiB | heap MiB | open fds | active handles | event-loop lag p99 ms | plans done |');
console.log('| --- | --- | --- | --- | --- | --- | --- |');
for (const s of samples) console.log(row(s));
for (const p of problems) console.log(`PROBLEM: ${p}`);
process.exit(problems.length > 0 ? 1 : 0);
