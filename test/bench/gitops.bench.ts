// `npm run bench -- gitops`: the GitOps loop's costs. (1) An unchanged poll: time and git HTTP
// requests per poll against the lab forge. (2) A 1,000-file plans repository: shallow fetch + tree
// read, and load + validate. (3) Push → PatchPlan applied through `kangal-patch run` (2 s poll).
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { stringify } from 'yaml';
import { createGitSource } from '../../controller/gitops/source/index.js';
import { loadSnapshot } from '../../controller/gitops/sync/index.js';
import { systemClock } from '../../controller/runtime/clock.js';
import { rootContext } from '../../controller/runtime/context.js';
import { startForge } from '../lab/forge/index.js';
import { waitFor } from '../lab/wait.js';
import { startJobLab } from '../e2e/support/job-lab.js';
import { labPlan } from '../e2e/support/plans.js';

const EXAMPLES = ['simple-upgrade', 'controlplane-only', 'custom-groups', 'maintenance-window', 'auto-update'];
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function pollAndLoad(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'kangal-bench-gitops-'));
  const forge = await startForge();
  try {
    const texts = EXAMPLES.map((e) => readFileSync(`examples/${e}.yaml`, 'utf8'));
    const files: Record<string, string> = {};
    for (let i = 0; i < 1000; i++)
      files[`plans/team-${i % 10}/plan-${i}.yaml`] = (texts[i % texts.length] ?? '').replace(
        /^( {2}name: )(\S+)$/m,
        `$1$2-${i}`,
      );
    const { cloneUrl } = await forge.createRepo('acme', 'plans', { files });
    const tokenFile = join(work, 'token');
    writeFileSync(tokenFile, forge.token);
    const source = createGitSource({
      url: cloneUrl,
      branch: 'main',
      path: 'plans',
      tokenFile,
      cacheDir: join(work, 'cache'),
    });
    const ctx = rootContext(systemClock, new AbortController().signal, 120_000);

    let t = performance.now();
    const snapshot = await source.snapshot(ctx);
    const fetchMs = performance.now() - t;
    const loads: number[] = [];
    let plans = 0;
    for (let i = 0; i < 5; i++) {
      t = performance.now();
      const loaded = loadSnapshot(snapshot, 'kangal-patch');
      loads.push(performance.now() - t);
      plans = loaded.plans.length;
    }
    const polls: number[] = [];
    const before = forge.gitRequests.length;
    const N = 20;
    for (let i = 0; i < N; i++) {
      t = performance.now();
      await source.head(ctx);
      polls.push(performance.now() - t);
    }
    const requests = (forge.gitRequests.length - before) / N;
    console.log(
      `unchanged poll (ref listing only, 1,000-file repo): median ${median(polls).toFixed(1)} ms, ${requests} git HTTP requests per poll (GET info/refs + POST ls-refs, no pack)`,
    );
    console.log(
      `shallow fetch + tree read of 1,000 plan files: ${fetchMs.toFixed(0)} ms (${snapshot.sources.length} files)`,
    );
    console.log(
      `load + validate of 1,000 plan files: median ${median(loads).toFixed(0)} ms (${plans} plans; goal < 1000 ms)`,
    );
  } finally {
    await forge.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

async function pushToApplied(): Promise<void> {
  const lab = await startJobLab({ fleet: { nodes: 2, controlPlanes: 1, talosVersion: 'v1.12.4' }, plansRepo: true });
  try {
    const controller = lab.startController({ args: lab.gitArgs({ pollInterval: '2s' }) });
    await waitFor(() => controller.logs().some((l) => l.msg === 'GitOps loop started'), {
      timeoutMs: 60_000,
      description: 'the GitOps loop',
    });
    const latencies: number[] = [];
    const pushes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const name = `bench-${i}`;
      const doc = labPlan(
        {
          apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
          kind: 'PatchPlan',
          metadata: { name },
          spec: { target: { talosVersion: 'v1.13.2' }, nodeSelector: { matchLabels: { none: 'x' } } },
        },
        lab.talos.endpoint,
      );
      await lab.plans!.write(`plans/${name}.yaml`, stringify(doc));
      const t0 = performance.now();
      await lab.plans!.commitAndPush(`add ${name}`);
      // From the push returned, as the idle bench counts it; the git CLI's own commit + push apart.
      const t = performance.now();
      pushes.push(t - t0);
      await waitFor(async () => lab.plan(name), { timeoutMs: 60_000, intervalMs: 20, description: `${name} applied` });
      latencies.push(performance.now() - t);
    }
    console.log(
      `push → PatchPlan applied (poll interval 2 s, jittered): median ${median(latencies).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms over ${latencies.length} pushes (goal ≤ 4000 ms; the git CLI's commit + push itself: median ${median(pushes).toFixed(0)} ms, not counted)`,
    );
  } finally {
    await lab.stop();
  }
}

/** The same with a 10 min poll interval and a signed GitHub push webhook sent right after each push (goal ≤ 2 s; issue 18 asks p99 ≤ 250 ms). */
async function webhookToApplied(): Promise<void> {
  const lab = await startJobLab({ fleet: { nodes: 2, controlPlanes: 1, talosVersion: 'v1.12.4' }, plansRepo: true });
  const dir = mkdtempSync(join(tmpdir(), 'kangal-bench-webhook-'));
  try {
    const secret = randomBytes(16).toString('hex');
    writeFileSync(join(dir, 'secret'), secret);
    const controller = lab.startController({
      args: lab.gitArgs({
        pollInterval: '10m',
        extra: ['--webhook-bind-address', '127.0.0.1:0', '--webhook-secret-file', join(dir, 'secret')],
      }),
    });
    const listening = await waitFor(() => controller.logs().find((l) => l.msg === 'webhook listening'), {
      timeoutMs: 60_000,
      description: 'the webhook',
    });
    await waitFor(() => controller.logs().some((l) => l.msg === 'GitOps loop started'), {
      timeoutMs: 60_000,
      description: 'the GitOps loop',
    });
    const latencies: number[] = [];
    const pushes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const name = `hook-${i}`;
      const doc = labPlan(
        {
          apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
          kind: 'PatchPlan',
          metadata: { name },
          spec: { target: { talosVersion: 'v1.13.2' }, nodeSelector: { matchLabels: { none: 'x' } } },
        },
        lab.talos.endpoint,
      );
      await lab.plans!.write(`plans/${name}.yaml`, stringify(doc));
      const t0 = performance.now();
      const after = await lab.plans!.commitAndPush(`add ${name}`);
      const t = performance.now();
      pushes.push(t - t0);
      const body = JSON.stringify({ ref: 'refs/heads/main', after });
      const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
      const res = await fetch(`http://127.0.0.1:${String(listening.port)}/`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': signature },
      });
      if (res.status !== 202) throw new Error(`webhook answered ${res.status}`);
      await waitFor(async () => lab.plan(name), { timeoutMs: 60_000, intervalMs: 20, description: `${name} applied` });
      latencies.push(performance.now() - t);
    }
    console.log(
      `push + webhook → PatchPlan applied (poll interval 10 min): median ${median(latencies).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms over ${latencies.length} pushes, from the push returned to the apply (goal ≤ 2000 ms here; issue 18: p99 ≤ 250 ms; the git CLI's commit + push itself: median ${median(pushes).toFixed(0)} ms, not counted)`,
    );
  } finally {
    await lab.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<void> {
  console.log(
    `load average: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  await pollAndLoad();
  await pushToApplied();
  await webhookToApplied();
}
