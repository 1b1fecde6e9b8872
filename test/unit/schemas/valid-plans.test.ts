// Examples validate, defaults match the configuration reference, and problems point at the right place.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadPlanSources } from '../../../controller/gitops/load/index.js';
import { planYaml } from './plan-fixtures.js';

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => !e.name.startsWith('.'))
    .flatMap((e) =>
      e.isDirectory() ? yamlFiles(join(dir, e.name)) : /\.ya?ml$/.test(e.name) ? [join(dir, e.name)] : [],
    );
}

describe('schemas: valid PatchPlan documents', function () {
  const examples = yamlFiles('examples');

  it('finds the example files', function () {
    for (const name of [
      'simple-upgrade',
      'controlplane-only',
      'custom-groups',
      'maintenance-window',
      'auto-update',
      'talos-secret-example',
    ]) {
      assert.ok(examples.includes(join('examples', `${name}.yaml`)), name);
    }
    assert.ok(
      examples.some((f) => f.startsWith(join('examples', 'plans-repo'))),
      'plans-repo example',
    );
  });

  it("the README's first plan is examples/simple-upgrade.yaml as it is", function () {
    const readme = readFileSync('README.md', 'utf8');
    const section = readme.slice(readme.indexOf('## A first plan'));
    const shown = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    assert.equal(shown, readFileSync(join('examples', 'simple-upgrade.yaml'), 'utf8'));
  });

  for (const file of examples) {
    it(`validates ${file}`, function () {
      const result = loadPlanSources([{ file, content: readFileSync(file) }]);
      assert.deepEqual(result.problems, []);
      assert.ok(result.plans.length >= 1, 'at least one plan');
    });
  }

  it('skips the Secret next to a plan and validates the plan', function () {
    const file = join('examples', 'talos-secret-example.yaml');
    const result = loadPlanSources([{ file, content: readFileSync(file) }]);
    assert.equal(result.skipped, 1);
    assert.deepEqual(
      result.plans.map((p) => [p.plan.metadata.name, p.line]),
      [['uses-talos-credentials', 15]],
    );
  });

  it('applies the documented defaults', function () {
    const [loaded] = loadPlanSources([{ file: 'p.yaml', content: planYaml(() => undefined) }]).plans;
    assert.ok(loaded);
    const { target, ...rest } = loaded.plan.spec;
    assert.deepEqual(target, { talosVersion: 'v1.12.1', source: 'ghcr', allowTalosDowngrade: false });
    assert.deepEqual(rest, {
      groups: {},
      strategy: { order: ['controlPlane', 'workers'] },
      failurePolicy: { type: 'Halt', maxFailures: 1 },
      retention: { history: '168h' },
      delayBetweenNodes: '5m',
      respectPDBs: true,
      evictUnmanagedPods: false,
      drainTimeout: '5m',
      drain: { waitForVolumeDetach: false, volumeDetachTimeout: '5m' },
      upgrade: { rebootMode: 'default' },
      rollback: { onFailure: false },
      rebootTimeout: '10m',
      kubernetesUpgradeTimeout: '10m',
      prePull: true,
      paused: false,
      cancelled: false,
      talosConfig: { secretRef: { name: 'talos-credentials' } },
    });
  });

  it('applies autoUpdate and group defaults', function () {
    const yaml = planYaml((d) => {
      d.spec.target = { autoUpdate: { enabled: true } };
      d.spec.groups = { workers: {} };
    });
    const [loaded] = loadPlanSources([{ file: 'p.yaml', content: yaml }]).plans;
    assert.deepEqual(loaded?.plan.spec.target.autoUpdate, {
      enabled: true,
      allow: 'patch',
      checkInterval: '1h',
      minReleaseAge: '0s',
    });
    assert.deepEqual(loaded?.plan.spec.groups, { workers: { concurrency: 1 } });
  });

  it('accepts Go durations, day names in any case, Any, leap days, a time zone and a custom operator namespace', function () {
    const yaml = planYaml((d) => {
      Object.assign(d.spec, {
        delayBetweenNodes: '1h30m',
        drainTimeout: '90s',
        rebootTimeout: '1.5h',
        kubernetesUpgradeTimeout: '0',
      });
      d.spec.maintenance = {
        timezone: 'America/New_York',
        excludeDates: ['2028-02-29'],
        windows: [{ days: ['MONDAY', 'tue', 'Any'], startTime: '23:00', endTime: '00:30' }],
      };
      d.spec.talosConfig = { secretRef: { name: 'c', namespace: 'ops' } };
    });
    const result = loadPlanSources([{ file: 'p.yaml', content: yaml }], { operatorNamespace: 'ops' });
    assert.deepEqual(result.problems, []);
  });

  it('reports line and column of the offending value, key or parent', function () {
    const yaml = [
      'apiVersion: kangalpatch.ozalp.dk/v1alpha1', // 1
      'kind: PatchPlan', // 2
      'metadata:', // 3
      '  name: p', // 4
      'spec:', // 5
      '  target:', // 6
      '    talosVersion: 1.10', // 7
      '  grups: {}', // 8
      '  talosConfig: {}', // 9
      '',
    ].join('\n');
    const result = loadPlanSources([{ file: 'plans/p.yaml', content: yaml }]);
    assert.deepEqual(
      result.problems.map((p) => [p.line, p.column, p.path]),
      [
        [7, 19, 'spec.target.talosVersion'], // the value
        [8, 3, 'spec.grups'], // the unknown key
        [9, 3, 'spec.talosConfig.secretRef'], // missing: where its parent is written
      ],
    );
  });
});
