// Label selectors (controller/core/selector.ts), one row per operator and edge, and the PDB adapter
// in controller/kube/label-selector.ts that shares the implementation.
import assert from 'node:assert/strict';
import { labelSelector } from '../../../schemas/primitives.js';
import { matchesSelector, type LabelSelector } from '../../../controller/core/selector.js';
import { selectorMatches } from '../../../controller/kube/label-selector.js';

const node = { 'kubernetes.io/hostname': 'w1', 'node-role.kubernetes.io/control-plane': '', zone: 'a', tier: 'gpu' };
const sel = (s: unknown): LabelSelector => labelSelector.parse(s);

const cases: [name: string, selector: LabelSelector | undefined, labels: Record<string, string>, expected: boolean][] =
  [
    ['undefined selector: everything', undefined, node, true],
    ['empty selector: everything', sel({}), node, true],
    ['empty matchLabels and matchExpressions: everything', sel({ matchLabels: {}, matchExpressions: [] }), node, true],
    ['empty selector on a node without labels', sel({}), {}, true],
    // matchLabels
    ['matchLabels: equal value', sel({ matchLabels: { zone: 'a' } }), node, true],
    ['matchLabels: other value', sel({ matchLabels: { zone: 'b' } }), node, false],
    ['matchLabels: label missing', sel({ matchLabels: { rack: '1' } }), node, false],
    [
      'matchLabels: empty value matches an empty label',
      sel({ matchLabels: { 'node-role.kubernetes.io/control-plane': '' } }),
      node,
      true,
    ],
    ['matchLabels: empty value needs the label', sel({ matchLabels: { rack: '' } }), node, false],
    ['matchLabels: all pairs must match', sel({ matchLabels: { zone: 'a', tier: 'cpu' } }), node, false],
    ['matchLabels: values are case sensitive', sel({ matchLabels: { zone: 'A' } }), node, false],
    // In
    ['In: value listed', sel({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['b', 'a'] }] }), node, true],
    [
      'In: value not listed',
      sel({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['b', 'c'] }] }),
      node,
      false,
    ],
    ['In: label missing', sel({ matchExpressions: [{ key: 'rack', operator: 'In', values: ['1'] }] }), node, false],
    [
      'In: empty label value listed as ""',
      sel({ matchExpressions: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'In', values: [''] }] }),
      node,
      true,
    ],
    // NotIn
    [
      'NotIn: value not listed',
      sel({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['b'] }] }),
      node,
      true,
    ],
    [
      'NotIn: value listed',
      sel({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }),
      node,
      false,
    ],
    [
      'NotIn: label missing matches (as in Kubernetes)',
      sel({ matchExpressions: [{ key: 'rack', operator: 'NotIn', values: ['1'] }] }),
      node,
      true,
    ],
    // Exists / DoesNotExist
    ['Exists: label present', sel({ matchExpressions: [{ key: 'zone', operator: 'Exists' }] }), node, true],
    [
      'Exists: label present with empty value',
      sel({ matchExpressions: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }] }),
      node,
      true,
    ],
    ['Exists: label missing', sel({ matchExpressions: [{ key: 'rack', operator: 'Exists' }] }), node, false],
    ['DoesNotExist: label missing', sel({ matchExpressions: [{ key: 'rack', operator: 'DoesNotExist' }] }), node, true],
    [
      'DoesNotExist: label present',
      sel({ matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] }),
      node,
      false,
    ],
    [
      'DoesNotExist: workers (no control-plane label)',
      sel({ matchExpressions: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'DoesNotExist' }] }),
      { zone: 'a' },
      true,
    ],
    // combinations: everything is ANDed
    [
      'matchLabels and expressions all hold',
      sel({
        matchLabels: { zone: 'a' },
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['gpu'] },
          { key: 'rack', operator: 'DoesNotExist' },
        ],
      }),
      node,
      true,
    ],
    [
      'one failing expression fails the selector',
      sel({
        matchLabels: { zone: 'a' },
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['gpu'] },
          { key: 'zone', operator: 'DoesNotExist' },
        ],
      }),
      node,
      false,
    ],
    [
      'failing matchLabels fails despite expressions',
      sel({ matchLabels: { zone: 'b' }, matchExpressions: [{ key: 'tier', operator: 'Exists' }] }),
      node,
      false,
    ],
    // inherited properties are not labels
    [
      'Exists on an Object.prototype name',
      sel({ matchExpressions: [{ key: 'constructor', operator: 'Exists' }] }),
      {},
      false,
    ],
    [
      'DoesNotExist on an Object.prototype name',
      sel({ matchExpressions: [{ key: 'toString', operator: 'DoesNotExist' }] }),
      {},
      true,
    ],
    [
      'NotIn on an Object.prototype name',
      sel({ matchExpressions: [{ key: 'constructor', operator: 'NotIn', values: ['x'] }] }),
      {},
      true,
    ],
  ];

describe('core/selector: matchesSelector', function () {
  for (const [name, selector, labels, expected] of cases) {
    it(`${name} → ${expected}`, function () {
      assert.equal(matchesSelector(selector, labels), expected);
    });
  }

  it('an operator outside the schema (unvalidated input) matches nothing', function () {
    const bogus = { matchExpressions: [{ key: 'zone', operator: 'Bogus' }] } as unknown as LabelSelector;
    assert.equal(matchesSelector(bogus, node), false);
  });
});

describe('kube/label-selector: PodDisruptionBudget semantics over the core matcher', function () {
  for (const [name, selector, labels, expected] of cases) {
    if (selector === undefined) continue;
    it(`same as core: ${name}`, function () {
      assert.equal(selectorMatches(selector, labels), expected);
    });
  }

  it('a missing selector matches no pod; an empty one every pod', function () {
    assert.equal(selectorMatches(undefined, node), false);
    assert.equal(selectorMatches(null, node), false);
    assert.equal(selectorMatches({}, node), true);
  });

  it('an unknown operator matches nothing', function () {
    assert.equal(selectorMatches({ matchExpressions: [{ key: 'zone', operator: 'Bogus' }] }, node), false);
    assert.equal(
      selectorMatches(
        {
          matchExpressions: [
            { key: 'zone', operator: 'Exists' },
            { key: 'zone', operator: 'in', values: ['a'] },
          ],
        },
        node,
      ),
      false,
    );
  });
});
