// Latency of MachineService.Version through the Talos simulator: the product client, mTLS,
// `node` metadata routing, one shared channel; 1,000 sequential calls after a short warm-up.
import { randomBytes } from 'node:crypto';
import { createTalosClient } from '../../controller/talos/index.js';
import { makeLabDir } from '../lab/process.js';
import { createRecordingFleet, startTalosSimulator } from '../lab/talos/index.js';
import { testContext } from '../support/op-context.js';

function percentile(sorted: number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] ?? NaN;
}

export async function run(calls = 1000): Promise<{ p50: number; p99: number }> {
  const dir = makeLabDir('talos-bench');
  const fleet = createRecordingFleet([
    {
      name: 'cp-1',
      role: 'controlplane',
      talosVersion: 'v1.14.0',
      kubernetesVersion: 'v1.35.4',
      schematic: randomBytes(32).toString('hex'),
      internalIP: '127.0.79.10',
    },
    {
      name: 'w-1',
      role: 'worker',
      talosVersion: 'v1.12.6',
      kubernetesVersion: 'v1.35.4',
      schematic: randomBytes(32).toString('hex'),
      internalIP: '127.0.79.11',
    },
  ]);
  const sim = await startTalosSimulator({ fleet, dir: dir.path, nodeListeners: false });
  const client = createTalosClient({ endpoints: [sim.endpoint], secret: sim.secretData }, { idleCloseMs: 0 });
  const ctx = testContext({ timeoutMs: 10 * 60_000 });
  try {
    for (let i = 0; i < 50; i++) await client.version(ctx, '127.0.79.11');
    const samples: number[] = [];
    for (let i = 0; i < calls; i++) {
      const t0 = process.hrtime.bigint();
      await client.version(ctx, '127.0.79.11');
      samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    samples.sort((a, b) => a - b);
    const p50 = percentile(samples, 50);
    const p99 = percentile(samples, 99);
    console.log(
      `Talos Version via simulator (mTLS, node metadata), ${calls} calls: p50 ${p50.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms`,
    );
    return { p50, p99 };
  } finally {
    client.close();
    await sim.stop();
    dir.remove();
  }
}
