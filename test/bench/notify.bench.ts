// `npm run bench -- notify`: a dead receiver must not slow a rollout (issue 17). The same plan shape
// runs six times through the real `kangal-patch run` process, each over its own pool of 6 workers
// (concurrency 2), alternating a controller without receivers and one whose receivers are dead: one
// stalls every request until its timeout, one answers 500 (retried with backoff). Printed: each
// makespan (first slot Lease → last job Completed, the observer's own times), the median per
// condition and the difference against the spread of the runs without receivers (goal: within noise).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { startJobLab } from '../e2e/support/job-lab.js';
import { labPlan } from '../e2e/support/plans.js';
import { startWebhookReceiver } from '../lab/webhook-receiver.js';
import { waitFor } from '../lab/wait.js';

const RUNS = 6;
const POOL_SIZE = 6;
const TIMINGS = { upgradeMs: 800, shutdownMs: 200, rebootMs: 1_000, bootMs: 500, pullMs: 0, installMs: 0 };
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;

export async function run(): Promise<void> {
  const labels = Object.fromEntries(
    Array.from({ length: RUNS * POOL_SIZE }, (_, i) => [
      `worker-${i + 1}`,
      { 'bench/pool': `p${Math.floor(i / POOL_SIZE)}` },
    ]),
  );
  const lab = await startJobLab({
    fleet: { nodes: RUNS * POOL_SIZE + 1, controlPlanes: 1, talosVersion: 'v1.12.4' },
    labels,
    timings: TIMINGS,
    images: ['siderolabs/installer:v1.13.2'],
  });
  const stalled = await startWebhookReceiver();
  stalled.setFallback('stall');
  const failing = await startWebhookReceiver();
  failing.setFallback({ status: 500 });
  const dir = mkdtempSync(join(tmpdir(), 'kp-bench-notify-'));
  const config = join(dir, 'notify.yaml');
  writeFileSync(
    config,
    stringify({
      receivers: [
        { name: 'stalled', type: 'webhook', url: stalled.url(), timeout: '2m' },
        { name: 'failing', type: 'slack', url: failing.url('/services/T0/B0/x') },
      ],
    }),
    { mode: 0o600 },
  );
  const makespans: Record<'none' | 'dead', number[]> = { none: [], dead: [] };
  try {
    for (let k = 0; k < RUNS; k++) {
      const condition = k % 2 === 0 ? 'none' : 'dead';
      const controller = lab.startController({
        args: ['--log-level', 'info', ...(condition === 'dead' ? ['--notify-config-file', config] : [])],
      });
      await waitFor(() => controller.logs().some((l) => String(l.msg).startsWith('leading')) || undefined, {
        timeoutMs: 60_000,
        description: 'controller leading',
      });
      const name = `bench-${k}`;
      await lab.applyPlan(
        labPlan(
          { apiVersion: 'kangalpatch.ozalp.dk/v1alpha1', kind: 'PatchPlan', metadata: { name }, spec: {} },
          lab.talos.endpoint,
          {
            target: { talosVersion: 'v1.13.2' },
            strategy: { order: ['workers'] },
            groups: { workers: { concurrency: 2 } },
            nodeSelector: { matchLabels: { 'bench/pool': `p${k}` } },
          },
        ),
      );
      await lab.waitForPlan(name, 'Completed', (s) => s.phase === 'Completed' || s.phase === 'Failed', 10 * 60_000);
      await controller.stop();
      const pool = new Set(Object.keys(labels).filter((n) => labels[n]?.['bench/pool'] === `p${k}`));
      const ev = lab.observer.events.filter((e) => pool.has(e.node) || e.detail.startsWith(`${name}-`));
      const start = Math.min(...ev.filter((e) => e.kind === 'leaseCreated').map((e) => e.at));
      const end = Math.max(
        ...ev.filter((e) => e.kind === 'jobPhase' && e.detail.endsWith('Completed')).map((e) => e.at),
      );
      makespans[condition].push(end - start);
      console.log(
        `run ${k + 1}: ${condition === 'dead' ? 'dead receivers' : 'no receivers  '} makespan ${((end - start) / 1000).toFixed(2)} s`,
      );
    }
    const none = median(makespans.none);
    const dead = median(makespans.dead);
    const spread = Math.max(...makespans.none) - Math.min(...makespans.none);
    console.log(
      `median makespan: no receivers ${(none / 1000).toFixed(2)} s, dead receivers ${(dead / 1000).toFixed(2)} s; difference ${((dead - none) / 1000).toFixed(2)} s against a spread of ${(spread / 1000).toFixed(2)} s among the runs without (goal: within it)`,
    );
    console.log(
      `the dead receivers got ${stalled.deliveries.length + failing.deliveries.length} requests (stalled ${stalled.deliveries.length}, failing ${failing.deliveries.length}), none answered 2xx`,
    );
  } finally {
    await stalled.stop();
    await failing.stop();
    await lab.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
