// `npm run chaos -- --runs N --seed S [--faults a,b,...] [--max-nodes M]`: runs seeds S, S+1, ...
// S+N-1 one after another (each in a fresh lab), prints one line per run and a summary, and exits
// non-zero when any run broke a promise. A failing seed replays with `--seed <it> --runs 1` (and
// the same --faults / --max-nodes).
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
  },
});
const runs = Number(values.runs);
const seed = Number(values.seed);
const maxNodes = Number(values['max-nodes']);
const faults = values.faults ? values.faults.split(',').map((f) => f.trim()) : [...FAULT_KINDS];
const unknown = faults.filter((f) => !(FAULT_KINDS as readonly string[]).includes(f));
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed) || !Number.isInteger(maxNodes) || maxNodes < 3 || maxNodes > 40 || unknown.length > 0) {
  console.error(`usage: npm run chaos -- --runs N --seed S [--faults ${FAULT_KINDS.join(',')}] [--max-nodes 3..40]${unknown.length > 0 ? `\nunknown fault(s): ${unknown.join(', ')}` : ''}`);
  process.exit(2);
}

const results: RunResult[] = [];
const started = Date.now();
console.log(`chaos: ${runs} run(s) from seed ${seed}, faults ${faults.join(',')}`);
for (let i = 0; i < runs; i++) {
  const s = drawScenario(seed + i, faults as FaultKind[], maxNodes);
  console.log(describeScenario(s));
  let r: RunResult;
  try {
    r = await runScenario(s, { log: (l) => console.log(l) });
  } catch (err) {
    // The lab itself could not run the scenario: not a controller violation, but never hidden.
    r = { scenario: describeScenario(s), seed: s.seed, wallMs: 0, expectedPhase: '?', finalPhase: undefined, fired: [], selfExits: 0, violations: [`the run could not be carried out: ${(err as Error).stack ?? String(err)}`] };
  }
  results.push(r);
  console.log(`  ${r.violations.length === 0 ? 'ok' : 'VIOLATED'} in ${(r.wallMs / 1000).toFixed(1)} s: expected ${r.expectedPhase}, ended ${String(r.finalPhase)}, faults fired: ${r.fired.join(',') || 'none'}${r.selfExits > 0 ? `, ${r.selfExits} replica(s) exited by themselves and were restarted` : ''}`);
  for (const v of r.violations) console.log(`    - ${v}`);
}
await mochaHooks.afterAll();

const failed = results.filter((r) => r.violations.length > 0);
const firedCount = new Map<string, number>();
for (const r of results) for (const f of r.fired) firedCount.set(f, (firedCount.get(f) ?? 0) + 1);
console.log(`\nchaos summary: ${results.length} run(s), seeds ${seed}..${seed + runs - 1}, ${failed.length} with violations, wall ${((Date.now() - started) / 1000).toFixed(0)} s`);
console.log(`faults fired: ${[...firedCount].sort().map(([k, n]) => `${k} ${n}`).join(', ')}`);
if (failed.length > 0) console.log(`failing seeds: ${failed.map((r) => r.seed).join(' ')}`);
process.exit(failed.length > 0 ? 1 : 0);
