// Runs the loader fuzzer for a number of generated files from one seed, keeping figures: outcomes,
// kinds of input, worst time and heap growth per file, unhandled rejections. Shared by
// `npm run fuzz` (100,000 files) and the unit suite (2,000 per run).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { checkPlanInput, type CheckResult, type Outcome } from './check-plan-input.js';
import { arbPlanInput, loadExampleCorpus, type FuzzInput } from './plan-inputs.js';

export interface FuzzOptions {
  runs: number;
  seed: number;
  /** Also run every `cliEvery`-th file through `kangal-patch validate` from disk (1 = all). */
  cliEvery: number;
  /** fast-check replay path of a failing case (printed with it). */
  path?: string;
  /** Called every `progressEvery` files with the figures so far (a long run shows where it is). */
  onProgress?: (report: FuzzReport) => void;
  progressEvery?: number;
  /** Where to keep the slowest file seen, to look at it afterwards. */
  keepSlowestAt?: string;
}

interface Worst {
  value: number;
  kind: string;
  bytes: number;
}

export interface FuzzReport {
  seed: number;
  runs: number;
  outcomes: Record<Outcome, number>;
  kinds: Record<string, number>;
  totalBytes: number;
  largest: number;
  worstMs: Worst;
  worstHeap: Worst;
  unhandledRejections: number;
  /** Set when a file broke a promise: what, and where to find the input to reproduce it. */
  failure?: { message: string; replay: string; inputFile: string };
}

export async function fuzzPlans(opts: FuzzOptions): Promise<FuzzReport> {
  const dir = await mkdtemp(join(tmpdir(), 'kangal-fuzz-'));
  const report: FuzzReport = {
    seed: opts.seed,
    runs: 0,
    outcomes: { plans: 0, problems: 0, skipped: 0, empty: 0 },
    kinds: {},
    totalBytes: 0,
    largest: 0,
    worstMs: { value: 0, kind: '', bytes: 0 },
    worstHeap: { value: 0, kind: '', bytes: 0 },
    unhandledRejections: 0,
  };
  let rejections = 0;
  const onRejection = (): void => void rejections++;
  process.on('unhandledRejection', onRejection);
  let counting = true;
  try {
    const property = fc.asyncProperty(arbPlanInput(loadExampleCorpus()), async (input: FuzzInput) => {
      const before = rejections;
      const r = await checkPlanInput(input.bytes, dir, report.runs % opts.cliEvery === 0);
      // Let a rejection nobody awaited surface before judging the file.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (rejections > before) r.violations.push('an unhandled promise rejection happened while loading this file');
      if (counting) {
        const slowest = record(report, input, r);
        if (slowest && opts.keepSlowestAt) await writeFile(opts.keepSlowestAt, input.bytes);
        if (opts.onProgress && report.runs % (opts.progressEvery ?? 10_000) === 0) opts.onProgress(report);
      }
      if (r.violations.length > 0) {
        counting = false;
        throw new Error(`${input.kind} (${input.bytes.byteLength} bytes): ${r.violations.join('; ')}`);
      }
    });
    const details = await fc.check(property, {
      numRuns: opts.runs,
      seed: opts.seed,
      path: opts.path,
      endOnFailure: false,
    });
    report.unhandledRejections = rejections;
    if (details.failed && details.counterexample) {
      const [input] = details.counterexample;
      const inputFile = join(tmpdir(), `kangal-fuzz-seed-${opts.seed}-${details.counterexamplePath ?? 'x'}.yaml`);
      await writeFile(inputFile, input.bytes);
      const message =
        details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
      report.failure = { message, replay: `--seed ${opts.seed} --path ${details.counterexamplePath ?? ''}`, inputFile };
    }
  } finally {
    process.off('unhandledRejection', onRejection);
    await rm(dir, { recursive: true, force: true });
  }
  return report;
}

/** Adds one file's outcome and cost to the figures; true when it is the slowest so far. */
function record(
  report: FuzzReport,
  input: FuzzInput,
  { outcome, ms, heapBytes: heap }: Pick<CheckResult, 'outcome' | 'ms' | 'heapBytes'>,
): boolean {
  report.runs++;
  report.outcomes[outcome]++;
  const kind = input.kind.split('+')[0] ?? input.kind;
  report.kinds[kind] = (report.kinds[kind] ?? 0) + 1;
  report.totalBytes += input.bytes.byteLength;
  report.largest = Math.max(report.largest, input.bytes.byteLength);
  if (heap > report.worstHeap.value)
    report.worstHeap = { value: heap, kind: input.kind, bytes: input.bytes.byteLength };
  if (ms <= report.worstMs.value) return false;
  report.worstMs = { value: ms, kind: input.kind, bytes: input.bytes.byteLength };
  return true;
}

export function formatFuzzReport(r: FuzzReport): string {
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  const lines = [
    `seed ${r.seed}: ${r.runs} files (${mb(r.totalBytes)}, largest ${r.largest} bytes)`,
    `outcomes: ${Object.entries(r.outcomes)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    `inputs: ${Object.entries(r.kinds)
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
    `worst time per file: ${r.worstMs.value.toFixed(1)} ms (${r.worstMs.kind}, ${r.worstMs.bytes} bytes)`,
    `worst heap growth per file: ${mb(r.worstHeap.value)} (${r.worstHeap.kind}, ${r.worstHeap.bytes} bytes)`,
    `unhandled rejections: ${r.unhandledRejections}`,
  ];
  if (r.failure)
    lines.push(
      `FAILED: ${r.failure.message}`,
      `input saved to ${r.failure.inputFile}`,
      `reproduce: npm run fuzz -- ${r.failure.replay}`,
    );
  return lines.join('\n');
}
