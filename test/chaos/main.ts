// `npm run chaos -- --runs N --seed S [--faults a,b,...] [--max-nodes M] [--jobs J]`: runs seeds S,
// S+1, ... S+N-1 (each in a fresh lab, J labs at a time: default 1), prints each run's lines when it
// ends and a summary, and exits non-zero when any run broke a promise. A failing seed replays with
// `--seed <it> --runs 1` (and the same --faults / --max-nodes): a run's draw depends on its seed
// alone, never on --jobs. Runs side by side share the machine's cores, so their timings stretch;
// the checker's promises do not depend on timing.
import { parseArgs } from 'node:util';
import { mochaHooks } from '../support/global-hooks.js';
import { runScenario, type RunResult } from './run.js';
import { describeScenario, drawScenario, FAULT_KINDS, type FaultKind } from './scenario.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    faults: { type: 'string' },
    'max-nodes': { type: 'string', default: '40' },
    jobs: { type: 'string', default: '1' },
  },
});
const runs = Number(values.runs);
const seed = Number(values.seed);
const maxNodes = Number(values['max-nodes']);
const jobs = Number(values.jobs);
const faults = values.faults ? values.faults.split(',').map((f) => f.trim()) : [...FAULT_KINDS];
const unknown = faults.filter((f) => !(FAULT_KINDS as readonly string[]).includes(f));
if (
  !Number.isInteger(runs) ||
  runs < 1 ||
  !Number.isInteger(seed) ||
  !Number.isInteger(maxNodes) ||
  maxNodes < 3 ||
  maxNodes > 40 ||
  !Number.isInteger(jobs) ||
  jobs < 1 ||
  unknown.length > 0
) {
  console.error(
    `usage: npm run chaos -- --runs N --seed S [--faults ${FAULT_KINDS.join(',')}] [--max-nodes 3..40] [--jobs J]${unknown.length > 0 ? `\nunknown fault(s): ${unknown.join(', ')}` : ''}`,
  );
  process.exit(2);
}

const results: RunResult[] = [];
const started = Date.now();
console.log(
  `chaos: ${runs} run(s) from seed ${seed}, faults ${faults.join(',')}${jobs > 1 ? `, ${jobs} at a time` : ''}`,
);

/** One seed: its lines are kept and printed together when it ends, so runs side by side do not interleave. */
async function runSeed(runSeedValue: number): Promise<void> {
  const s = drawScenario(runSeedValue, faults as FaultKind[], maxNodes);
  const lines = [describeScenario(s)];
  const log = (l: string): void => {
    if (jobs === 1) console.log(l);
    else lines.push(`  [${s.seed}] ${l}`);
  };
  if (jobs === 1) console.log(lines[0]);
  let r: RunResult;
  try {
    r = await runScenario(s, { log });
  } catch (err) {
    // The lab itself could not run the scenario: not a controller violation, but never hidden.
    r = {
      scenario: describeScenario(s),
      seed: s.seed,
      wallMs: 0,
      expectedPhase: '?',
      finalPhase: undefined,
      fired: [],
      selfExits: 0,
      violations: [`the run could not be carried out: ${(err as Error).stack ?? String(err)}`],
    };
  }
  results.push(r);
  const verdict = [
    `  ${r.violations.length === 0 ? 'ok' : 'VIOLATED'} in ${(r.wallMs / 1000).toFixed(1)} s: expected ${r.expectedPhase}, ended ${String(r.finalPhase)}, faults fired: ${r.fired.join(',') || 'none'}${r.selfExits > 0 ? `, ${r.selfExits} replica(s) exited by themselves and were restarted` : ''}`,
  ];
  for (const v of r.violations) verdict.push(`    - ${v}`);
  console.log((jobs === 1 ? verdict : [...lines, ...verdict]).join('\n'));
}

let next = 0;
const worker = async (): Promise<void> => {
  for (let i = next++; i < runs; i = next++) await runSeed(seed + i);
};
await Promise.all(Array.from({ length: Math.min(jobs, runs) }, worker));
await mochaHooks.afterAll();

const failed = results.filter((r) => r.violations.length > 0);
const firedCount = new Map<string, number>();
for (const r of results) for (const f of r.fired) firedCount.set(f, (firedCount.get(f) ?? 0) + 1);
console.log(
  `\nchaos summary: ${results.length} run(s), seeds ${seed}..${seed + runs - 1}, ${failed.length} with violations, wall ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
console.log(
  `faults fired: ${[...firedCount]
    .sort()
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')}`,
);
if (failed.length > 0)
  console.log(
    `failing seeds: ${failed
      .map((r) => r.seed)
      .sort((a, b) => a - b)
      .join(' ')}`,
  );
process.exit(failed.length > 0 ? 1 : 0);
