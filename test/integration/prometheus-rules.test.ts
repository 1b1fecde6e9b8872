// The alerts KangalPatch ships (kustomize/monitoring/prometheus-rule.yaml), checked by the real
// promtool (Prometheus v3.16, built from the Go module proxy into the lab cache on first use):
// `promtool check rules` on the PrometheusRule's spec.groups, and `promtool test rules` with the unit
// tests in kustomize/monitoring/tests/, where each alert fires on the series that should fire it and
// not otherwise.
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { promtoolBinary } from '../lab/alerting/binaries.js';
import { makeLabDir, runToEnd, type LabDir } from '../lab/process.js';

const monitoring = fileURLToPath(new URL('../../kustomize/monitoring/', import.meta.url));
type Rule = { alert?: string; record?: string; annotations?: Record<string, string> };
type Groups = { name: string; rules: Rule[] }[];

describe('kustomize/monitoring: the shipped alerts under promtool', function () {
  // A cold build of promtool takes many minutes on 2 cores; cached it is instant.
  this.timeout(3_600_000);
  let dir: LabDir;
  let promtool: string;
  let groups: Groups;

  before(async function () {
    promtool = await promtoolBinary();
    dir = makeLabDir('kangal-promtool');
    groups = (parse(readFileSync(join(monitoring, 'prometheus-rule.yaml'), 'utf8')) as { spec: { groups: Groups } })
      .spec.groups;
    // The unit tests' rule file. Annotations are left out: their text is not what the tests are
    // about (check rules below parses their templates on the full groups).
    const bare = groups.map((g) => ({ ...g, rules: g.rules.map(({ annotations: _annotations, ...rule }) => rule) }));
    writeFileSync(join(dir.path, 'rules.yaml'), stringify({ groups: bare }));
  });
  after(function () {
    dir?.remove();
  });

  it("promtool check rules accepts the PrometheusRule's groups (expressions, durations, annotation templates)", async function () {
    const file = join(dir.path, 'prometheus-rule-groups.yaml');
    writeFileSync(file, stringify({ groups }));
    const r = await runToEnd(promtool, ['check', 'rules', file]);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const count = groups.reduce((n, g) => n + g.rules.length, 0);
    assert.match(r.stdout, new RegExp(`SUCCESS: ${count} rules found`));
  });

  it('promtool test rules: each alert fires on its series and not otherwise; every alert has tests', async function () {
    const tests = join(dir.path, 'kangal-patch.test.yaml');
    copyFileSync(join(monitoring, 'tests', 'kangal-patch.test.yaml'), tests);
    const r = await runToEnd(promtool, ['test', 'rules', tests]);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /SUCCESS/);

    const alerts = groups.flatMap((g) => g.rules.flatMap((rule) => (rule.alert ? [rule.alert] : [])));
    const cases = (
      parse(readFileSync(tests, 'utf8')) as {
        tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[];
      }
    ).tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const alert of alerts) {
      assert.ok(
        cases.some((c) => c.alertname === alert && c.exp_alerts.length > 0),
        `${alert}: a test where it fires`,
      );
      assert.ok(
        cases.some((c) => c.alertname === alert && c.exp_alerts.length === 0),
        `${alert}: a test where it does not`,
      );
    }
  });

  it('a broken unit test fails (the runner does not pass everything)', async function () {
    const tests = join(dir.path, 'broken.test.yaml');
    const doc = parse(readFileSync(join(monitoring, 'tests', 'kangal-patch.test.yaml'), 'utf8')) as {
      tests: { alert_rule_test?: { exp_alerts: unknown[] }[] }[];
    };
    const first = doc.tests[0]?.alert_rule_test?.[0];
    if (first) first.exp_alerts = [{ exp_labels: { plan: 'a', severity: 'critical' } }];
    writeFileSync(tests, stringify(doc));
    const r = await runToEnd(promtool, ['test', 'rules', tests]);
    assert.notEqual(r.code, 0, r.stdout);
    assert.match(`${r.stdout}${r.stderr}`, /FAILED/);
  });
});
