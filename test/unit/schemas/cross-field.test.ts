// The cross-field rules (schemas/rules.ts) are one table feeding zod and the CRD's CEL. Here: the
// zod side reports exactly the rules each corpus document breaks, the corpus covers every rule, and
// the generated CRD carries every rule's CEL and no cross-field CEL that is not in the table. The
// apiserver's side of the same corpus is test/integration/admission.test.ts.
import assert from 'node:assert/strict';
import { parse, stringify } from 'yaml';
import { loadPlanSources } from '../../../controller/gitops/load/index.js';
import { patchPlanDocument } from '../../../schemas/index.js';
import { ATTACHED_RULES, celFieldPath, toCelValidation, type CelValidation } from '../../../schemas/cross-field.js';
import { renderGenerated } from '../../../schemas/crd.js';
import { ADMISSION_CORPUS } from './admission-corpus.js';
import { basePlan } from './plan-fixtures.js';

const allRules = ATTACHED_RULES.flatMap((a) => a.rules);

function corpusDoc(edit: (d: ReturnType<typeof basePlan>) => void) {
  const d = basePlan();
  edit(d);
  return d;
}

/** Every x-kubernetes-validations entry of a generated CRD. */
function crdValidations(file: string): CelValidation[] {
  const out: CelValidation[] = [];
  const walk = (node: unknown): void => {
    if (typeof node !== 'object' || node === null) return;
    for (const [k, v] of Object.entries(node)) {
      if (k === 'x-kubernetes-validations') out.push(...(v as CelValidation[]));
      else walk(v);
    }
  };
  walk(parse(renderGenerated()[`kustomize/crd/${file}`] ?? ''));
  return out;
}

describe('schemas: cross-field rules (zod and CEL from one table)', function () {
  it('has unique rule ids', function () {
    const ids = allRules.map((r) => r.id);
    assert.deepEqual([...new Set(ids)], ids);
  });

  for (const c of ADMISSION_CORPUS) {
    it(`zod reports exactly the broken rules: ${c.name}`, function () {
      const doc = corpusDoc(c.edit);
      const parsed = patchPlanDocument.safeParse(doc);
      assert.equal(parsed.success, false);
      const issues = parsed.error?.issues ?? [];
      const rules = issues.map((i) =>
        i.code === 'custom' ? (i.params as { rule?: string } | undefined)?.rule : undefined,
      );
      assert.deepEqual([...rules].sort(), [...c.breaks].sort(), JSON.stringify(issues.map((i) => i.message)));
      // ...and `validate` prints one problem per broken rule, with the rule's message.
      const problems = loadPlanSources([{ file: 'p.yaml', content: stringify(doc) }]).problems;
      assert.deepEqual(problems.map((p) => p.message).sort(), issues.map((i) => i.message).sort());
    });
  }

  it('the corpus breaks every rule', function () {
    const covered = new Set(ADMISSION_CORPUS.flatMap((c) => c.breaks));
    assert.deepEqual(
      allRules.map((r) => r.id).filter((id) => !covered.has(id)),
      [],
    );
  });

  it('the base plan and a plan with valid custom groups break no rule', function () {
    const ok = corpusDoc((d) => {
      d.spec.target.kubernetesVersion = 'v1.34.1';
      d.spec.groups = {
        db: { selector: { matchExpressions: [{ key: 'role', operator: 'Exists' }] } },
        workers: { concurrency: 2 },
      };
      d.spec.strategy = { order: ['controlPlane', 'db', 'workers'] };
      d.spec.maintenance = { windows: [{ startTime: '23:00', endTime: '01:00' }] };
    });
    assert.equal(patchPlanDocument.safeParse(basePlan()).success, true);
    assert.deepEqual(patchPlanDocument.safeParse(ok).error?.issues ?? [], []);
  });

  it('the PatchPlan CRD carries every rule as CEL, and no other cross-field CEL', function () {
    const inCrd = crdValidations('kangalpatch.ozalp.dk_patchplans.yaml');
    const key = (v: CelValidation) => JSON.stringify([v.rule, v.message, v.messageExpression, v.fieldPath]);
    const crdKeys = new Set(inCrd.map(key));
    for (const rule of allRules) assert.ok(crdKeys.has(key(toCelValidation(rule))), `${rule.id} is in the CRD`);
    const ruleKeys = new Set(allRules.map((r) => key(toCelValidation(r))));
    // The only other CEL is field-level: duration bounds (schemas/primitives.ts duration).
    const others = inCrd.filter((v) => !ruleKeys.has(key(v)));
    assert.ok(others.length > 0);
    for (const v of others) assert.match(v.rule, /^duration\(self\) [<>]= duration\('[0-9a-z]+'\)$/);
  });

  it('renders CRD fieldPaths relative to the rule, brackets for names that are not identifiers', function () {
    assert.equal(celFieldPath(['strategy', 'order']), '.strategy.order');
    assert.equal(celFieldPath(['db.x', 'selector']), "['db.x'].selector");
    assert.equal(
      toCelValidation(allRules.find((r) => r.id === 'target.versionOrAutoUpdate') ?? assert.fail()).fieldPath,
      undefined,
    );
  });
});
