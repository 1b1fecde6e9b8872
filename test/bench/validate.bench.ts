// 1,000 plan files through the shared loader: in memory, from disk (what `validate` does), and as
// a whole `kangal-patch validate` process. The issue asks for well under a second.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { collectPlanFiles } from '../../controller/gitops/load/files.js';
import { DEFAULT_LIMITS, loadPlanSources, type PlanSource } from '../../controller/gitops/load/index.js';

const EXAMPLES = ['simple-upgrade', 'controlplane-only', 'custom-groups', 'maintenance-window', 'auto-update'];
const FILES = 1000;

function makeSources(): PlanSource[] {
  const texts = EXAMPLES.map((e) => readFileSync(`examples/${e}.yaml`, 'utf8'));
  return Array.from({ length: FILES }, (_, i) => {
    const text = texts[i % texts.length] ?? '';
    // Unique names: duplicate names would be (correctly) reported as problems.
    return { file: `plans/plan-${i}.yaml`, content: text.replace(/^( {2}name: )(\S+)$/m, `$1$2-${i}`) };
  });
}

function timed<T>(fn: () => T): [T, number] {
  const start = performance.now();
  const value = fn();
  return [value, performance.now() - start];
}

export async function run(): Promise<void> {
  const sources = makeSources();
  // Shared CI machines are noisy; the load average makes numbers from different runs comparable.
  console.log(
    `load average: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  );
  const bytes = sources.reduce((n, s) => n + Buffer.byteLength(s.content), 0);
  loadPlanSources(sources.slice(0, 50)); // warm up the JIT and the schema cache

  const runs = Array.from({ length: 5 }, () => timed(() => loadPlanSources(sources)));
  const [result] = runs[0] ?? [];
  if (!result || result.plans.length !== FILES || result.problems.length > 0)
    throw new Error('benchmark plans did not validate');
  const best = Math.min(...runs.map(([, ms]) => ms));
  console.log(
    `in memory: ${FILES} files (${(bytes / 1024).toFixed(0)} KiB) validated in ${best.toFixed(0)} ms (best of 5), ${((best * 1000) / FILES).toFixed(0)} µs/file`,
  );

  const dir = mkdtempSync(join(tmpdir(), 'kp-bench-'));
  try {
    for (const s of sources) writeFileSync(join(dir, s.file.replace('plans/', '')), s.content);
    const start = performance.now();
    const collected = await collectPlanFiles([dir], DEFAULT_LIMITS.maxBytes);
    const fromDisk = loadPlanSources(collected.sources);
    const ms = performance.now() - start;
    if (fromDisk.plans.length !== FILES) throw new Error('disk benchmark plans did not validate');
    console.log(`from disk: ${FILES} files read and validated in ${ms.toFixed(0)} ms`);

    const [, processMs] = timed(() =>
      execFileSync(process.execPath, ['bin/kangal-patch.js', 'validate', dir], { stdio: 'pipe' }),
    );
    console.log(
      `process:   kangal-patch validate on ${FILES} files in ${processMs.toFixed(0)} ms (includes Node start and tsx compile)`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
