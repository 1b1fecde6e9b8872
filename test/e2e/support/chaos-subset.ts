// The fixed subset of the chaos campaign (`npm run chaos`, test/chaos/) that runs in `npm test`:
// each seed replayed exactly as the campaign runs it (fresh lab, compiled controller, faults on
// lab-observed triggers, the independent checker). The seeds live in two files so mocha's parallel
// workers can run them side by side. A failing case names its replay command.
import assert from 'node:assert/strict';
import { runScenario } from '../../chaos/run.js';
import { describeScenario, drawScenario, type FaultKind } from '../../chaos/scenario.js';

export interface SubsetCase {
  seed: number;
  faults: FaultKind[];
  maxNodes: number;
}

export function chaosSubset(title: string, cases: SubsetCase[]): void {
  describe(title, function () {
    this.timeout(600_000);
    for (const c of cases) {
      const s = drawScenario(c.seed, c.faults, c.maxNodes);
      const replay = `npm run chaos -- --seed ${c.seed} --runs 1 --faults ${c.faults.join(',')} --max-nodes ${c.maxNodes}`;
      it(`${describeScenario(s)}: no promise broken`, async function () {
        const r = await runScenario(s);
        assert.deepEqual(
          r.fired.sort(),
          [...new Set(s.faults.map((f) => f.kind))].sort(),
          `every drawn fault fired (replay: ${replay})`,
        );
        assert.deepEqual(r.violations, [], `seed ${c.seed}: ${replay}`);
        assert.equal(r.finalPhase, r.expectedPhase, `seed ${c.seed}: ${replay}`);
      });
    }
  });
}
