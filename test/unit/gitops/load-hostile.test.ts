// Hostile plan files: the cases the fuzzer found (each a fixed regression), then 2,000 fuzzed files
// per run from a seed printed in the output (KANGAL_FUZZ_SEED=<seed> reproduces a run; `npm run
// fuzz` runs 100,000 with the same oracle: test/fuzz/check-plan-input.ts).
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { loadPlanFile, loadPlanSources, type Problem } from '../../../controller/gitops/load/index.js';
import { formatFuzzReport, fuzzPlans } from '../../fuzz/fuzz-plans.js';
import { planYaml } from '../schemas/plan-fixtures.js';

const load = (text: string, limits = {}): Problem[] =>
  loadPlanFile({ file: 'p.yaml', content: text }, { limits }).problems;
const brief = (ps: Problem[]) => ps.map((p) => `${p.line}:${p.column} ${p.path}: ${p.message}`);

describe('gitops/load: hostile plan files', function () {
  it('names an unknown key called __proto__ or constructor as unknown, not with a member of Object', function () {
    // Found by the fuzzer: the hint table was indexed with the key, and `__proto__` found Object.prototype.
    for (const key of ['__proto__', 'constructor', 'toString']) {
      const yaml = planYaml((d) => Object.defineProperty(d.spec, key, { value: 1, enumerable: true }));
      assert.deepEqual(
        loadPlanSources([{ file: 'p.yaml', content: yaml }]).problems.map((p) => [p.path, p.message]),
        [[`spec.${key}`, `unknown field "${key}"`]],
      );
    }
  });

  it('refuses a file with bare CR line endings with one message saying so', function () {
    // Found by the fuzzer: `yaml` reads such a file as one line and gave dozens of errors, or a stack overflow.
    const text = planYaml(() => undefined).replace(/\n/g, '\r');
    assert.deepEqual(brief(load(text)), [
      '1:1 : file has bare CR line endings (classic Mac style): save it with LF (or CRLF) line endings',
    ]);
    assert.deepEqual(load(planYaml(() => undefined).replace(/\n/g, '\r\n')), [], 'CRLF stays fine');
  });

  it('refuses thousands of implicit keys on one line before parsing, at the key that goes too deep', function () {
    // Found by the fuzzer: `a: a: a: …` is an error `yaml` still parses recursively, until its stack runs out.
    assert.deepEqual(brief(load(`${'a: '.repeat(5000)}x\n`)), ['1:98 : YAML nesting is deeper than 32 levels']);
    const flow = brief(load('a: {b: 1, c: 2, d: 3, e: 4}\n', { maxDepth: 2 }));
    assert.ok(!flow.some((p) => p.includes('nesting')), `keys in a flow mapping do not nest: ${flow.join('; ')}`);
  });

  it('says a missing choice field is required, not "not undefined"', function () {
    // Found by the fuzzer: a renamed `operator` key read "must be one of "In", …, not undefined".
    const yaml = planYaml((d) => (d.spec.nodeSelector = { matchExpressions: [{ key: 'zone', values: ['a'] }] }));
    assert.deepEqual(
      loadPlanSources([{ file: 'p.yaml', content: yaml }]).problems.map((p) => [p.path, p.message]),
      [
        [
          'spec.nodeSelector.matchExpressions[0].operator',
          'is required: one of "In", "NotIn", "Exists", "DoesNotExist"',
        ],
      ],
    );
  });

  it('refuses healthChecks written as a mapping with a message, without throwing', function () {
    // Found by the fuzzer: the duplicate-name check ran on the non-list and threw "list.forEach is not a function".
    for (const value of [{}, 'x', 3]) {
      const yaml = planYaml((d) => (d.spec.healthChecks = value));
      const problems = loadPlanSources([{ file: 'p.yaml', content: yaml }]).problems;
      assert.deepEqual(
        problems.map((p) => p.path),
        ['spec.healthChecks'],
      );
      assert.match(problems[0]?.message ?? '', /^must be a list, not /);
    }
  });

  it('refuses thousands of empty documents before parsing them', function () {
    // Found by `npm run fuzz` (seed 4242): 11,315 `---` took over a second to parse before the document cap applied.
    assert.deepEqual(brief(load('---\n\n'.repeat(11_315))), [
      '1:1 : file has at least 11315 YAML documents, more than the limit of 64',
    ]);
    assert.deepEqual(brief(load('--- a\n---\n---\t\n----\n', { maxDocuments: 2 })), [
      '1:1 : file has at least 3 YAML documents, more than the limit of 2',
    ]);
  });

  it('reports a parser stack overflow once, at its document, the same way every time', function () {
    // With the pre-scan lifted, `yaml` runs out of stack: the problem must not depend on the caller's stack depth.
    const text = `${'? '.repeat(20_000)}x\n`;
    const expected = ['1:1 : YAML is nested or chained too deeply to parse: simplify the structure'];
    assert.deepEqual(brief(load(text, { maxDepth: 1e9 })), expected);
    const deeper = (n: number): Problem[] => (n === 0 ? load(text, { maxDepth: 1e9 }) : deeper(n - 1));
    assert.deepEqual(brief(deeper(500)), expected);
  });

  it('2,000 fuzzed files: no throw, no unhandled rejection, every problem placed and worded, validate agrees', async function () {
    this.timeout(300_000);
    const seed =
      process.env.KANGAL_FUZZ_SEED === undefined ? randomInt(2 ** 31 - 1) : Number(process.env.KANGAL_FUZZ_SEED);
    console.log(
      `      fuzz seed ${seed} (rerun: KANGAL_FUZZ_SEED=${seed} npx mocha test/unit/gitops/load-hostile.test.ts)`,
    );
    const report = await fuzzPlans({ runs: 2000, seed, cliEvery: 4 });
    console.log(formatFuzzReport(report).replace(/^/gm, '      '));
    assert.equal(report.failure, undefined, report.failure && `${report.failure.message}\n${report.failure.inputFile}`);
    assert.equal(report.unhandledRejections, 0);
    assert.equal(report.runs, 2000);
  });
});
