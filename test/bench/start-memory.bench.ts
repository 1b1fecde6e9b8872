// `npm run bench -- start-memory [--nodes=20] [--rounds=2]`: what the controller holds once started
// (leading, caches synced, nothing to do), run as the image runs it — the bundle
// dist/kangal-patch.mjs — against the same build's one-file-per-module dist/controller/cli.js with
// node_modules beside it. Heap used is read after two full garbage collections (through the
// inspector, so no flag of the product changes), RSS from /proc right after. Same lab, same flags,
// the two entries alternated so that load drifts hit both.
import { rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { JobLab } from '../e2e/support/job-lab.js';
import { controllerEnv } from '../lab/image-env.js';
import { makeLabDir } from '../lab/process.js';
import { waitFor } from '../lab/wait.js';
import { repoRoot } from '../support/manifests.js';
import { layOutProduct } from '../support/product.js';
import { startScaleLab } from './scale/fleet.js';
import { memoryMiB } from './scale/sampler.js';

const arg = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;

/** Sends Chrome DevTools Protocol commands in turn over the inspector's WebSocket; the results in order. */
async function devtools(url: string, commands: { method: string; params?: object }[]): Promise<unknown[]> {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  const results: unknown[] = [];
  for (const [i, c] of commands.entries()) {
    results.push(
      await new Promise((resolve) => {
        const onMessage = (ev: MessageEvent): void => {
          const msg = JSON.parse(String(ev.data)) as { id?: number; result?: unknown };
          if (msg.id !== i + 1) return;
          ws.removeEventListener('message', onMessage);
          resolve(msg.result);
        };
        ws.addEventListener('message', onMessage);
        ws.send(JSON.stringify({ id: i + 1, ...c }));
      }),
    );
  }
  ws.close();
  return results;
}

interface StartFigures {
  heapUsedMiB: number;
  rssMiB: number;
}

async function measure(lab: JobLab, name: string, entry: string): Promise<StartFigures> {
  // The image's environment (test/lab/image-env.ts), with the inspector the measurement reads through.
  const env = controllerEnv();
  const c = lab.startController({
    name,
    entry,
    args: ['--log-level', 'info'],
    env: { ...env, NODE_OPTIONS: `${env['NODE_OPTIONS'] ?? ''} --inspect=127.0.0.1:0` },
  });
  try {
    await waitFor(
      () =>
        (c.logs().some((l) => l.msg === 'caches synced') &&
          c.logs().some((l) => String(l.msg).startsWith('leading'))) ||
        undefined,
      { timeoutMs: 300_000, intervalMs: 250, description: `${name}: caches synced and leading` },
    );
    const url = await waitFor(() => /ws:\/\/127\.0\.0\.1:\d+\/[\w-]+/.exec(c.process.tail(200))?.[0], {
      timeoutMs: 10_000,
      description: `${name}: inspector URL`,
    });
    const [, , evaluated] = await devtools(url, [
      { method: 'HeapProfiler.collectGarbage' },
      { method: 'HeapProfiler.collectGarbage' },
      { method: 'Runtime.evaluate', params: { expression: 'process.memoryUsage().heapUsed', returnByValue: true } },
    ]);
    const heapUsed = (evaluated as { result: { value: number } }).result.value;
    return { heapUsedMiB: heapUsed / 2 ** 20, rssMiB: memoryMiB(c.process.pid).rss };
  } finally {
    await c.stop();
  }
}

export async function run(): Promise<void> {
  const workers = Number(arg('nodes', '20'));
  const rounds = Number(arg('rounds', '2'));
  const bundleApp = makeLabDir('kangal-start-bundle');
  const distApp = makeLabDir('kangal-start-dist');
  const { lab, startSeconds } = await startScaleLab(workers);
  try {
    console.log(`${workers} workers (${workers * 10} pods): lab ready in ${startSeconds.toFixed(1)} s`);
    const entries = { bundle: await layOutProduct(bundleApp.path), dist: await layOutProduct(distApp.path) };
    // The same build without its bundle: bin/kangal-patch.js then loads dist/controller/cli.js, which needs node_modules.
    rmSync(join(distApp.path, 'dist/kangal-patch.mjs'));
    symlinkSync(join(repoRoot, 'node_modules'), join(distApp.path, 'node_modules'));
    const figures: Record<string, StartFigures[]> = { dist: [], bundle: [] };
    for (let r = 1; r <= rounds; r++) {
      for (const variant of ['dist', 'bundle'] as const) {
        const f = await measure(lab, `start-${variant}-${r}`, entries[variant]);
        figures[variant]?.push(f);
        console.log(
          `round ${r} ${variant.padEnd(6)} heap used ${f.heapUsedMiB.toFixed(1)} MiB, RSS ${f.rssMiB.toFixed(1)} MiB`,
        );
      }
    }
  } finally {
    await lab.stop();
    bundleApp.remove();
    distApp.remove();
  }
}
