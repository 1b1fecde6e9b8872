// `npm run bench -- fleet-start [--workers=1000]`: how long the scale benches' lab (scale/fleet.ts:
// `workers` workers, ~10 pods each behind PDBs) takes to start, step by step, and whose CPU each
// step costs: this process (fleet, workloads, Talos simulator, observer) against etcd,
// kube-apiserver and kube-controller-manager. CPU seconds are each process's own (/proc), so they
// do not count waiting for a core on a loaded machine; wall seconds do. Writes test/bench/results.
import { loadavg } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { recordResult } from './results.js';
import { PODS_PER_NODE, startScaleLab } from './scale/fleet.js';
import { LAB_PROGRAMS, labCpuSeconds } from './scale/sampler.js';
import { apiserverRequests, counterSamples } from './scale/api-counts.js';
import { scrapeApiserver } from './scale/measure.js';

const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const SETTLE_MS = 30_000;

interface Snapshot {
  step: string;
  wallSeconds: number;
  load1m: number;
  /** CPU seconds so far per program: `self` is this process. */
  cpu: Record<string, number>;
}

export async function run(): Promise<void> {
  const workers = Number(arg('workers', '1000'));
  const pods = workers * PODS_PER_NODE + 1;
  const started = process.hrtime.bigint();
  const wall = (): number => Number(process.hrtime.bigint() - started) / 1e9;
  const snapshots: Snapshot[] = [
    { step: 'start', wallSeconds: 0, load1m: loadavg()[0] ?? 0, cpu: labCpuSeconds(undefined) },
  ];
  let dir: string | undefined;
  const { lab, startSeconds } = await startScaleLab(workers, {
    progress: (step, clusterDir) => {
      if (dir === undefined) console.log(`  cluster run directory (certificates for /debug/pprof): ${clusterDir}`);
      dir = clusterDir;
      const s = { step, wallSeconds: wall(), load1m: loadavg()[0] ?? 0, cpu: labCpuSeconds(clusterDir) };
      snapshots.push(s);
      console.log(`  +${s.wallSeconds.toFixed(1)} s ${step} (load ${s.load1m.toFixed(1)})`);
    },
  });
  try {
    snapshots.push({ step: 'ready', wallSeconds: startSeconds, load1m: loadavg()[0] ?? 0, cpu: labCpuSeconds(dir) });
    // Every request the apiserver served since it started (all clients): which writes the start costs.
    const requests = [...apiserverRequests(counterSamples(await scrapeApiserver(lab), 'apiserver_request_total'))].sort(
      ([, a], [, b]) => b - a,
    );
    // Not part of the start: whether the lab is still catching up (kube-controller-manager's PDB
    // backlog, watch fan-out) when the rollout would begin, which would load the measured span.
    await delay(SETTLE_MS);
    snapshots.push({
      step: `(${SETTLE_MS / 1000} s after ready)`,
      wallSeconds: wall(),
      load1m: loadavg()[0] ?? 0,
      cpu: labCpuSeconds(dir),
    });
    const columns = ['self', ...LAB_PROGRAMS];
    console.log(
      `${workers} workers, ${pods} pods: lab ready in ${startSeconds.toFixed(1)} s (${(pods / startSeconds).toFixed(1)} pods/s overall)`,
    );
    console.log(['step', 'wall s', 'load', ...columns.map((c) => `${c} CPU s`)].join('\t'));
    const steps = snapshots.slice(1).map((s, i) => {
      const before = snapshots[i] ?? s;
      const cpu = Object.fromEntries(
        columns.map((c) => [c, Number(((s.cpu[c] ?? 0) - (before.cpu[c] ?? 0)).toFixed(1))]),
      );
      const row = {
        step: s.step,
        wallSeconds: Number((s.wallSeconds - before.wallSeconds).toFixed(1)),
        load1m: Number(s.load1m.toFixed(1)),
        cpu,
      };
      console.log([row.step, row.wallSeconds, row.load1m, ...columns.map((c) => cpu[c])].join('\t'));
      return row;
    });
    const total = Object.fromEntries(
      columns.map((c) => [c, Number(((snapshots.at(-2)?.cpu[c] ?? 0) - (snapshots[0]?.cpu[c] ?? 0)).toFixed(1))]),
    );
    console.log(['total', startSeconds.toFixed(1), '', ...columns.map((c) => total[c])].join('\t'));
    const topRequests = Object.fromEntries(requests.slice(0, 12));
    console.log(`apiserver requests during the start (all clients): ${JSON.stringify(topRequests)}`);
    console.log(
      `results: ${recordResult(`fleet-start ${workers}`, { workers, pods, startSeconds: Number(startSeconds.toFixed(1)), podsPerSecond: Number((pods / startSeconds).toFixed(1)), steps, cpuSeconds: total, topRequests })}`,
    );
  } finally {
    await lab.stop();
  }
}
