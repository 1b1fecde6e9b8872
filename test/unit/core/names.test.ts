import assert from 'node:assert/strict';
import { patchPlanSpec, patchPlanStatus } from '../../../schemas/patchplan.js';
import { someNames } from '../../../controller/core/names.js';
import { afterPreflight } from '../../../controller/core/plan/decide.js';
import { planNode, planObservation } from '../../support/plan-observation.js';

describe('core/names: names in messages', function () {
  it('names up to max, then counts the rest', function () {
    assert.equal(someNames(['a', 'b', 'c'], 3), 'a, b, c');
    assert.equal(someNames(['a', 'b', 'c', 'd'], 2), 'a, b and 2 more');
    assert.equal(
      someNames(
        Array.from({ length: 5002 }, (_, i) => `n${i}`),
        2,
      ),
      'n0, n1 and 5,000 more',
    );
  });

  // Found by the scale bench: the apiserver refused the status write of a 5,000-node plan
  // ("status.conditions[0].message: Too long: may not be more than 32768 bytes") and the plan stayed
  // Preflighting, running its preflight again and again.
  it('the preflight summary of a 5,000-node plan fits the condition message limit and stays valid', function () {
    const spec = patchPlanSpec.parse({
      target: { talosVersion: 'v1.13.2' },
      talosConfig: { secretRef: { name: 't' } },
    });
    const nodes = Array.from({ length: 5000 }, (_, i) => planNode(`worker-${i + 1}`));
    const o = planObservation({ phase: 'Preflighting' }, { nodes }, { name: 'big', spec });
    const step = afterPreflight(o, { status: { phase: 'Preflighting' }, events: [] }, [
      { name: 'All', passed: true, message: 'ok' },
    ]);
    const message = step.status.conditions?.[0]?.message ?? '';
    assert.ok(message.length < 2000, `${message.length} characters`);
    assert.match(message, /\(5000 node\(s\), concurrency \d+\): worker-1, worker-10, .* and 4,980 more/);
    assert.ok(patchPlanStatus.safeParse(step.status).success, 'a status the CRD accepts');
  });
});
