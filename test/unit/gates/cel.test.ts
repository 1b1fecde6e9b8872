// Health check expressions (controller/gates/cel.ts): compiled at load with their errors located in
// the plan file, evaluated over objects as tuppr users write them.
import assert from 'node:assert/strict';
import { compileExpression, expressionProblems } from '../../../controller/gates/cel.js';
import { formatProblem, loadPlanSources } from '../../../controller/gitops/load/index.js';
import { boundObject } from '../../../controller/kube/dynamic.js';

const volume = (status?: Record<string, unknown>) => ({ apiVersion: 'longhorn.io/v1beta2', kind: 'Volume', metadata: { name: 'pvc-1', namespace: 'longhorn-system' }, ...(status ? { status } : {}) });
const evaluate = (expr: string, object: Record<string, unknown>) => {
  const c = compileExpression(expr);
  if (!c.ok) throw new Error(c.error);
  return c.evaluate(object);
};

describe('gates/cel: health check expressions', function () {
  it('evaluates over the object\'s top-level fields, has() on optional fields', function () {
    const expr = 'has(status.robustness) && status.robustness == "healthy"';
    assert.deepEqual(evaluate(expr, volume({ robustness: 'healthy' })), { passed: true, value: 'true' });
    assert.deepEqual(evaluate(expr, volume({ robustness: 'degraded' })), { passed: false, value: 'false' });
    assert.deepEqual(evaluate(expr, volume()), { passed: false, value: 'false' }, 'an object without status: has() is false, not an error');
  });

  it('supports the macros tuppr users write (exists over conditions) and numbers from JSON', function () {
    const ready = 'status.conditions.exists(c, c.type == "Ready" && c.status == "True")';
    assert.equal(evaluate(ready, volume({ conditions: [{ type: 'Ready', status: 'True' }] })).passed, true);
    assert.equal(evaluate(ready, volume({ conditions: [{ type: 'Ready', status: 'False' }] })).passed, false);
    assert.equal(evaluate('status.readyReplicas >= 2 && self.kind == "Volume"', volume({ readyReplicas: 3 })).passed, true);
  });

  it('an evaluation error or a non-bool value fails the object, with the value in the message', function () {
    assert.deepEqual(evaluate('status.conditions.exists(c, c.type == "Ready")', volume()), { passed: false, value: 'error: field not found: conditions' });
    assert.deepEqual(evaluate('status.robustness', volume({ robustness: 'degraded' })), { passed: false, value: '"degraded" (not a bool)' });
  });

  it('refuses syntax errors and unknown variables at compile time', function () {
    const syntax = compileExpression('status.robustness ==');
    assert.equal(syntax.ok, false);
    assert.match(syntax.ok ? '' : syntax.error, /^1:\d+: /);
    const typo = compileExpression('stauts.robustness == "healthy"');
    assert.match(typo.ok ? '' : typo.error, /undeclared reference to "stauts"/);
    assert.equal(compileExpression('status.items.all(i, i.ok) && [1].exists(x, x == 1)').ok, true, 'comprehension variables are bound');
  });

  it('names the failing check by index', function () {
    const problems = expressionProblems({ healthChecks: [{ expr: 'true' }, { expr: 'status.x ==' }] });
    assert.deepEqual(problems.map((p) => p.path), [['spec', 'healthChecks', 1, 'expr']]);
  });

  it('bounds projected objects: managedFields and the last-applied annotation go', function () {
    const o = boundObject({ metadata: { name: 'x', managedFields: [{}], annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}', keep: 'y' } }, status: { a: 1 } });
    assert.deepEqual(o, { metadata: { name: 'x', annotations: { keep: 'y' } }, status: { a: 1 } });
  });
});

describe('gitops/load: health check expressions are compiled when the plan is loaded', function () {
  const file = (expr: string) => `apiVersion: kangalpatch.ozalp.dk/v1alpha1
kind: PatchPlan
metadata:
  name: gated
spec:
  target:
    talosVersion: "v1.12.1"
  healthChecks:
    - name: a
      apiVersion: v1
      kind: ConfigMap
      expr: "true"
    - name: b
      apiVersion: longhorn.io/v1beta2
      kind: Volume
      expr: ${expr}
  talosConfig:
    secretRef:
      name: talos
`;

  it('reports file:line:col: spec.healthChecks[1].expr: <CEL error> and refuses the plan', function () {
    const result = loadPlanSources([{ file: 'plans/gated.yaml', content: file("'status.robustness == '") }]);
    assert.equal(result.plans.length, 0, 'refused');
    assert.equal(result.problems.length, 1);
    assert.match(formatProblem(result.problems[0]!), /^plans\/gated\.yaml:16:13: spec\.healthChecks\[1\]\.expr: invalid CEL expression: 1:\d+: /);
  });

  it('accepts a valid expression with the defaults applied', function () {
    const result = loadPlanSources([{ file: 'plans/gated.yaml', content: file("'has(status.robustness)'") }]);
    assert.deepEqual(result.problems, []);
    const check = result.plans[0]?.plan.spec.healthChecks?.[1];
    assert.deepEqual([check?.timeout, check?.when, check?.onNoMatch], ['10m', 'beforeEachNode', 'hold']);
  });

  it('refuses objectName together with labelSelector, and a name used twice', function () {
    const doc = file("'true'").replace('      kind: Volume\n', '      kind: Volume\n      objectName: v\n      labelSelector: { matchLabels: { a: b } }\n').replace('- name: b', '- name: a');
    const problems = loadPlanSources([{ file: 'p.yaml', content: doc }]).problems.map((p) => `${p.path}: ${p.message}`);
    assert.ok(problems.some((p) => p.startsWith('spec.healthChecks[1].labelSelector: must not be set together with objectName')), problems.join('\n'));
    assert.ok(problems.some((p) => p.startsWith('spec.healthChecks[1].name: check "a" is listed more than once')), problems.join('\n'));
  });
});
