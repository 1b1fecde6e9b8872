// Every plan duration has a maximum where a larger value can only be a mistake, each refused with a
// message naming it; the long values allowed (a year of retention) still load. The CRDs carry the
// same bounds as CEL rules.
import assert from 'node:assert/strict';
import { loadPlanSources } from '../../../controller/gitops/load/index.js';
import { renderGenerated } from '../../../schemas/crd.js';
import { planYaml, type Doc } from './plan-fixtures.js';

type Edit = (d: Doc, value: string) => void;

const check = {
  name: 'ceph',
  apiVersion: 'ceph.rook.io/v1',
  kind: 'CephCluster',
  expr: 'status.ceph.health == "HEALTH_OK"',
};
const hook = { template: { spec: { containers: [{ name: 'c', image: 'registry.example/noout:1' }] } } };

const fields: Record<string, Edit> = {
  'spec.retention.history': (d, v) => (d.spec.retention = { history: v }),
  'spec.delayBetweenNodes': (d, v) => (d.spec.delayBetweenNodes = v),
  'spec.drainTimeout': (d, v) => (d.spec.drainTimeout = v),
  'spec.rebootTimeout': (d, v) => (d.spec.rebootTimeout = v),
  'spec.kubernetesUpgradeTimeout': (d, v) => (d.spec.kubernetesUpgradeTimeout = v),
  'spec.healthChecks[0].timeout': (d, v) => (d.spec.healthChecks = [{ ...check, timeout: v }]),
  'spec.hooks.preNode.timeout': (d, v) => (d.spec.hooks = { preNode: { ...hook, timeout: v } }),
  'spec.target.autoUpdate.minReleaseAge': (d, v) =>
    (d.spec.target = { autoUpdate: { enabled: true, minReleaseAge: v } }),
  'spec.target.autoUpdate.checkInterval': (d, v) =>
    (d.spec.target = { autoUpdate: { enabled: true, checkInterval: v } }),
};

// [field, largest value allowed, smallest refused, the message]
const table: [string, string, string, string][] = [
  ['spec.retention.history', '8760h', '8761h', 'must be at most 8760h (365 days)'],
  ['spec.delayBetweenNodes', '168h', '168h1s', 'must be at most 168h (7 days)'],
  ['spec.drainTimeout', '24h', '24h0m1s', 'must be at most 24h'],
  ['spec.rebootTimeout', '1440m', '86401s', 'must be at most 24h'],
  ['spec.kubernetesUpgradeTimeout', '24h', '25h', 'must be at most 24h'],
  ['spec.healthChecks[0].timeout', '24h', '720h', 'must be at most 24h'],
  ['spec.hooks.preNode.timeout', '6h', '7h', 'must be at most 6h (a hook holds its node or plan while it runs)'],
  ['spec.target.autoUpdate.minReleaseAge', '2160h', '2161h', 'must be at most 2160h (90 days)'],
  ['spec.target.autoUpdate.checkInterval', '168h', '169h', 'must be at most 168h (7 days)'],
];

function problems(edit: Edit, value: string): [string, string][] {
  const result = loadPlanSources([{ file: 'plan.yaml', content: planYaml((d) => edit(d, value)) }]);
  return result.problems.map((p) => [p.path, p.message]);
}

describe('schemas: duration maxima', function () {
  for (const [field, largest, refused, message] of table) {
    const edit = fields[field];
    if (!edit) throw new Error(`no edit for ${field}`);
    it(`${field}: ${largest} loads, ${refused} is refused with "${message}"`, function () {
      assert.deepEqual(problems(edit, largest), []);
      assert.deepEqual(problems(edit, refused), [[field, message]]);
    });
  }

  it('720h of retention (the value that used to spin the controller) is allowed', function () {
    assert.deepEqual(
      problems((d, v) => (d.spec.retention = { history: v }), '720h'),
      [],
    );
  });

  it('a malformed duration gets the syntax message only, not a bound too', function () {
    assert.deepEqual(
      problems((d, v) => (d.spec.drainTimeout = v), '2d'),
      [['spec.drainTimeout', 'must be a Go duration such as "300s", "5m" or "1h30m" (units ns, us, ms, s, m, h)']],
    );
  });

  it('the CRDs carry each maximum as a CEL rule, PatchJob timeouts too', function () {
    const files = renderGenerated();
    const plan = files['kustomize/crd/kangalpatch.ozalp.dk_patchplans.yaml'] ?? '';
    const job = files['kustomize/crd/kangalpatch.ozalp.dk_patchjobs.yaml'] ?? '';
    for (const max of ['8760h', '168h', '24h', '2160h'])
      assert.match(plan, new RegExp(`rule: duration\\(self\\) <= duration\\('${max}'\\)`));
    const jobRules = job.match(/rule: duration\(self\) <= duration\('24h'\)/g)?.length ?? 0;
    assert.ok(jobRules >= 3, `${jobRules} maxima in the PatchJob CRD`);
  });
});
