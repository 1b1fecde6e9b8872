// `npm run bench -- window [--plans=5]`: how fast a plan starts when its maintenance window opens,
// through the real `kangal-patch run` process. N plans, each over a worker of its own, are applied
// at once with windows (UTC) opening one a minute from the first whole minute at least 60 s away,
// so each has passed preflight and waits with OutsideMaintenanceWindow when its window opens.
// Printed: window start → the plan's first slot Lease and → its first PatchJob, from the observer's
// own watches (goal: p99 ≤ 250 ms, issue 18). Takes about N + 2 minutes after the lab start.
import { startJobLab } from '../e2e/support/job-lab.js';
import { labPlan } from '../e2e/support/plans.js';
import { waitFor } from '../lab/wait.js';
import { recordResult } from './results.js';

const TIMINGS = { upgradeMs: 300, shutdownMs: 100, rebootMs: 300, bootMs: 200, pullMs: 0, installMs: 0 };
const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)] ?? NaN;
const hhmm = (at: number): string => new Date(at).toISOString().slice(11, 16);

export async function run(): Promise<void> {
  const plans = Number(arg('plans', '5'));
  const labels = Object.fromEntries(
    Array.from({ length: plans }, (_, i) => [`worker-${i + 1}`, { 'bench/window': `w${i + 1}` }]),
  );
  const lab = await startJobLab({
    fleet: { nodes: plans + 1, controlPlanes: 1, talosVersion: 'v1.12.4' },
    labels,
    timings: TIMINGS,
    images: ['siderolabs/installer:v1.13.2'],
  });
  try {
    const controller = lab.startController({ args: ['--log-level', 'info'] });
    await waitFor(() => controller.logs().some((l) => String(l.msg).startsWith('leading')) || undefined, {
      timeoutMs: 60_000,
      description: 'controller leading',
    });
    const first = Math.ceil((Date.now() + 60_000) / 60_000) * 60_000;
    const opens = Array.from({ length: plans }, (_, i) => first + i * 60_000);
    for (const [i, at] of opens.entries()) {
      await lab.applyPlan(
        labPlan(
          {
            apiVersion: 'kangalpatch.ozalp.dk/v1alpha1',
            kind: 'PatchPlan',
            metadata: { name: `window-${i + 1}` },
            spec: {},
          },
          lab.talos.endpoint,
          {
            target: { talosVersion: 'v1.13.2' },
            strategy: { order: ['workers'] },
            nodeSelector: { matchLabels: { 'bench/window': `w${i + 1}` } },
            maintenance: { windows: [{ startTime: hhmm(at), endTime: hhmm(at + 30 * 60_000) }] },
          },
        ),
      );
    }
    for (let i = 0; i < plans; i++) {
      await lab.waitForPlan(
        `window-${i + 1}`,
        'waiting for its window',
        (s) => s.reason === 'OutsideMaintenanceWindow',
        90_000,
      );
    }
    const toLease: number[] = [];
    const toJob: number[] = [];
    for (const [i, at] of opens.entries()) {
      const plan = `window-${i + 1}`;
      const lease = await waitFor(
        () => lab.observer.events.find((e) => e.kind === 'leaseCreated' && e.detail.startsWith(`${plan}-`)),
        { timeoutMs: at - Date.now() + 60_000, description: `${plan}'s first slot Lease` },
      );
      const job = await waitFor(
        () => lab.observer.events.find((e) => e.kind === 'jobCreated' && e.detail.startsWith(`${plan}-`)),
        { timeoutMs: 30_000, description: `${plan}'s first PatchJob` },
      );
      toLease.push(lease.at - at);
      toJob.push(job.at - at);
    }
    for (let i = 0; i < plans; i++)
      await lab.waitForPlan(
        `window-${i + 1}`,
        'Completed',
        (s) => s.phase === 'Completed' || s.phase === 'Failed',
        120_000,
      );
    await controller.stop();
    const early = toLease.filter((ms) => ms < 0);
    console.log(`${plans} windows opening one a minute from ${hhmm(first)} UTC`);
    console.log(
      `window opens → first slot Lease: p50 ${pct(toLease, 50)} ms, p99 ${pct(toLease, 99)} ms, max ${Math.max(...toLease)} ms (goal p99 ≤ 250 ms); before the window: ${early.length}`,
    );
    console.log(
      `window opens → first PatchJob: p50 ${pct(toJob, 50)} ms, p99 ${pct(toJob, 99)} ms, max ${Math.max(...toJob)} ms`,
    );
    console.log(`results: ${recordResult('window', { plans, windowToLeaseMs: toLease, windowToJobMs: toJob })}`);
  } finally {
    await lab.stop();
  }
}
