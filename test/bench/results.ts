// Bench results on disk: test/bench/results/<YYYY-MM-DD>.json, one object per day keyed by bench
// name, each bench's latest figures replacing its earlier ones of that day (with the machine they ran on).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('./results/', import.meta.url));

function machine(): Record<string, unknown> {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? '?',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverage1m: Number(loadavg()[0]?.toFixed(2)),
    node: process.version,
  };
}

/** Merges `{ [bench]: data }` into today's results file; returns its path. */
export function recordResult(bench: string, data: unknown): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${new Date().toISOString().slice(0, 10)}.json`);
  const all = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>) : {};
  all[bench] = { at: new Date().toISOString(), machine: machine(), ...(data as Record<string, unknown>) };
  writeFileSync(path, `${JSON.stringify(all, null, 2)}\n`);
  return path;
}
