// Health check expressions (controller/health-checks/cel.ts): compiled at load with their errors located in
// the plan file, evaluated over objects as tuppr users write them.
import assert from 'node:assert/strict';
import { compileExpression, expressionProblems } from '../../../controller/health-checks/cel.js';
import { formatProblem, loadPlanSources } from '../../../controller/gitops/load/index.js';
import { boundObject } from '../../../controller/kube/dynamic.js';

const volume = (status?: Record<string, unknown>) => ({
  apiVersion: 'longhorn.io/v1beta2',
  kind: 'Volume',
  metadata: { name: 'pvc-1', namespace: 'longhorn-system' },
  ...(status ? { status } : {}),
});
const evaluate = (expr: string, object: Record<string, unknown>) => {
  const c = compileExpression(expr);
  if (!c.ok) throw new Error(c.error);
  return c.evaluate(object);
};

describe('health-checks/cel: health check expressions', function () {
  it("evaluates over the object's top-level fields, has() on optional fields", function () {
    const expr = 'has(status.robustness) && status.robustness == "healthy"';
    assert.deepEqual(evaluate(expr, volume({ robustness: 'healthy' })), { passed: true, value: 'true' });
    assert.deepEqual(evaluate(expr, volume({ robustness: 'degraded' })), { passed: false, value: 'false' });
    assert.deepEqual(
      evaluate(expr, volume()),
      { passed: false, value: 'false' },
      'an object without status: has() is false, not an error',
    );
  });

  it('supports the macros tuppr users write (exists over conditions) and numbers from JSON', function () {
    const ready = 'status.conditions.exists(c, c.type == "Ready" && c.status == "True")';
    assert.equal(evaluate(ready, volume({ conditions: [{ type: 'Ready', status: 'True' }] })).passed, true);
    assert.equal(evaluate(ready, volume({ conditions: [{ type: 'Ready', status: 'False' }] })).passed, false);
    assert.equal(
      evaluate('status.readyReplicas >= 2 && self.kind == "Volume"', volume({ readyReplicas: 3 })).passed,
      true,
    );
  });

  it('an evaluation error or a non-bool value fails the object with a fixed verdict, never a value read from it', function () {
    assert.deepEqual(evaluate('status.conditions.exists(c, c.type == "Ready")', volume()), {
      passed: false,
      value: 'evaluation error',
    });
    assert.deepEqual(evaluate('status.robustness', volume({ robustness: 'degraded' })), {
      passed: false,
      value: 'not a bool',
    });
    // The probes of a plan author who wants to read a field: the value, a conversion error that would
    // quote it, an index out of range that would name it. None of it comes back.
    const canary = 'canary-7f3e9a';
    const config = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c', namespace: 'n' },
      data: { token: canary },
    };
    for (const expr of [
      'data["token"]',
      'data.token',
      'bool(data["token"])',
      'int(data.token) > 0',
      'data.token + 1 == 2',
      '[data.token][3] == "x"',
      'data.missing == data.token',
      'timestamp(data.token) > timestamp("2020-01-01T00:00:00Z")',
      'duration(data.token) > duration("1s")',
      'data.token.matches("(")',
    ]) {
      const { value } = evaluate(expr, config);
      assert.ok(['false', 'not a bool', 'evaluation error'].includes(value), `${expr} → ${value}`);
      assert.doesNotMatch(value, /canary/, expr);
    }
  });

  it('an evaluation over its cost budget stops at once and fails the object with that verdict', function () {
    const items = Array.from({ length: 10 }, (_, i) => i);
    // 10^3 steps: within the budget.
    assert.deepEqual(
      evaluate('status.items.all(a, status.items.all(b, status.items.all(c, a + b + c >= 0)))', volume({ items })),
      { passed: true, value: 'true' },
    );
    // 60^3 = 216,000 steps, each loop paid for before it runs: stopped near the budget.
    const sixty = Array.from({ length: 60 }, (_, i) => i);
    const start = process.hrtime.bigint();
    assert.deepEqual(
      evaluate(
        'status.items.all(a, status.items.all(b, status.items.all(c, a + b + c >= 0)))',
        volume({ items: sixty }),
      ),
      { passed: false, value: 'over its cost budget' },
    );
    // An exists that would have found nothing also stops (its error is not absorbed by || or &&).
    assert.deepEqual(
      evaluate(
        'status.items.exists(a, status.items.exists(b, status.items.exists(c, a + b + c < 0))) || true',
        volume({ items: sixty }),
      ),
      { passed: false, value: 'over its cost budget' },
    );
    // A string doubled by nested maps grows 2^n: its characters are paid for.
    const doubling = `[status.s]${'.map(x, x + x)'.repeat(40)}.size() > 0`;
    assert.deepEqual(evaluate(doubling, volume({ s: 'abcdefgh' })), { passed: false, value: 'over its cost budget' });
    assert.ok(Number(process.hrtime.bigint() - start) / 1e9 < 30, 'three budgets, not three explosions');
  });

  it('refuses comprehensions nested deeper than three at compile time', function () {
    const four = 'status.a.all(a, status.a.all(b, status.a.all(c, status.a.all(d, true))))';
    const c = compileExpression(four);
    assert.equal(c.ok, false);
    assert.match(c.ok ? '' : c.error, /nest 4 deep, at most 3/);
    const ten = `status.a${'.all(x, status.a'.repeat(9)}.all(y, true)${')'.repeat(9)}`;
    assert.match(((r) => (r.ok ? '' : r.error))(compileExpression(ten)), /nest 10 deep/);
    assert.equal(
      compileExpression('status.a.all(a, status.a.all(b, status.a.exists(c, c == a)))').ok,
      true,
      'three is allowed',
    );
    assert.equal(
      compileExpression(
        'status.a.all(a, a > 0) && status.b.all(b, b > 0) && status.c.exists(c, c > 0) && status.d.all(d, d > 0)',
      ).ok,
      true,
      'side by side is not nesting',
    );
  });

  it('refuses syntax errors and unknown variables at compile time', function () {
    const syntax = compileExpression('status.robustness ==');
    assert.equal(syntax.ok, false);
    assert.match(syntax.ok ? '' : syntax.error, /^1:\d+: /);
    const typo = compileExpression('stauts.robustness == "healthy"');
    assert.match(typo.ok ? '' : typo.error, /undeclared reference to "stauts"/);
    assert.equal(
      compileExpression('status.items.all(i, i.ok) && [1].exists(x, x == 1)').ok,
      true,
      'comprehension variables are bound',
    );
  });

  it('names the failing check by index', function () {
    const problems = expressionProblems({ healthChecks: [{ expr: 'true' }, { expr: 'status.x ==' }] });
    assert.deepEqual(
      problems.map((p) => p.path),
      [['spec', 'healthChecks', 1, 'expr']],
    );
  });

  it('bounds projected objects: managedFields and the last-applied annotation go', function () {
    const o = boundObject({
      metadata: {
        name: 'x',
        managedFields: [{}],
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}', keep: 'y' },
      },
      status: { a: 1 },
    });
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
    assert.match(
      formatProblem(result.problems[0]!),
      /^plans\/gated\.yaml:16:13: spec\.healthChecks\[1\]\.expr: invalid CEL expression: 1:\d+: /,
    );
  });

  it('accepts a valid expression with the defaults applied', function () {
    const result = loadPlanSources([{ file: 'plans/gated.yaml', content: file("'has(status.robustness)'") }]);
    assert.deepEqual(result.problems, []);
    const check = result.plans[0]?.plan.spec.healthChecks?.[1];
    assert.deepEqual([check?.timeout, check?.when, check?.onNoMatch], ['10m', 'beforeEachNode', 'hold']);
  });

  it('refuses objectName together with labelSelector, and a name used twice', function () {
    const doc = file("'true'")
      .replace(
        '      kind: Volume\n',
        '      kind: Volume\n      objectName: v\n      labelSelector: { matchLabels: { a: b } }\n',
      )
      .replace('- name: b', '- name: a');
    const problems = loadPlanSources([{ file: 'p.yaml', content: doc }]).problems.map((p) => `${p.path}: ${p.message}`);
    assert.ok(
      problems.some((p) =>
        p.startsWith('spec.healthChecks[1].labelSelector: must not be set together with objectName'),
      ),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) => p.startsWith('spec.healthChecks[1].name: check "a" is listed more than once')),
      problems.join('\n'),
    );
  });

  it('refuses a check on Secrets, with the reason, wherever the plan comes from', function () {
    const doc = file("'true'").replace(
      '      apiVersion: longhorn.io/v1beta2\n      kind: Volume\n',
      '      apiVersion: v1\n      kind: Secret\n      namespace: kangal-patch\n',
    );
    const result = loadPlanSources([{ file: 'p.yaml', content: doc }]);
    assert.equal(result.plans.length, 0);
    const problems = result.problems.map((p) => `${p.path}: ${p.message}`);
    assert.ok(
      problems.some((p) => p.startsWith('spec.healthChecks[1].kind: Secrets cannot be health-checked')),
      problems.join('\n'),
    );
  });

  it('refuses comprehensions nested too deep with the file, line and column of the expression', function () {
    const result = loadPlanSources([
      {
        file: 'plans/deep.yaml',
        content: file("'status.a.all(a, status.a.all(b, status.a.all(c, status.a.all(d, true))))'"),
      },
    ]);
    assert.equal(result.plans.length, 0);
    assert.match(
      formatProblem(result.problems[0]!),
      /^plans\/deep\.yaml:\d+:\d+: spec\.healthChecks\[1\]\.expr: invalid CEL expression: comprehensions .* nest 4 deep, at most 3/,
    );
  });
});
