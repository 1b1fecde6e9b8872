// `npm run fuzz [-- --runs N --seed S --path P --cli-every K]`: the plan loader fuzzer at scale.
// Prints the seed first (a failing run reproduces exactly with it), then the figures. Exits 1 when
// a file broke a promise or when one file cost more than the budget below.
import { randomInt } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatFuzzReport, fuzzPlans } from './fuzz-plans.js';

/** Per file, on this 2-core shared machine: a hang or an expansion bomb shows up far above these. */
const BUDGET = { ms: 2_000, heapBytes: 256 * 1024 * 1024 };

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '100000' },
    seed: { type: 'string' },
    path: { type: 'string' },
    'cli-every': { type: 'string', default: '10' },
  },
});
const seed = values.seed === undefined ? randomInt(2 ** 31 - 1) : Number(values.seed);
const runs = Number(values.runs);
const cliEvery = Number(values['cli-every']);
if (!Number.isInteger(seed) || !Number.isInteger(runs) || runs < 1 || !Number.isInteger(cliEvery) || cliEvery < 1) {
  console.error('usage: npm run fuzz -- [--runs N] [--seed S] [--path P] [--cli-every K]');
  process.exit(2);
}
console.log(
  `fuzz: seed ${seed}, ${runs} files, every ${cliEvery === 1 ? '' : `${cliEvery}th `}file also through kangal-patch validate`,
);
const started = Date.now();
const slowestFile = join(tmpdir(), `kangal-fuzz-seed-${seed}-slowest.yaml`);
const report = await fuzzPlans({
  runs,
  seed,
  cliEvery,
  path: values.path,
  keepSlowestAt: slowestFile,
  onProgress: (r) =>
    console.log(
      `... ${r.runs} files, ${((Date.now() - started) / 1000).toFixed(0)} s, worst ${r.worstMs.value.toFixed(0)} ms, problems ${r.outcomes.problems}, plans ${r.outcomes.plans}`,
    ),
});
console.log(formatFuzzReport(report));
console.log(`slowest file kept at ${slowestFile}`);
console.log(
  `wall time ${((Date.now() - started) / 1000).toFixed(0)} s, peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
);
const over = [
  report.worstMs.value > BUDGET.ms ? `a file took ${report.worstMs.value.toFixed(0)} ms (budget ${BUDGET.ms})` : '',
  report.worstHeap.value > BUDGET.heapBytes
    ? `a file grew the heap by ${report.worstHeap.value} bytes (budget ${BUDGET.heapBytes})`
    : '',
].filter(Boolean);
for (const o of over) console.log(`OVER BUDGET: ${o}`);
process.exit(report.failure || report.unhandledRejections > 0 || over.length > 0 ? 1 : 0);
