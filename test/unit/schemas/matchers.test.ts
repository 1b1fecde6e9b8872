// Alertmanager's matcher syntax (schemas/matchers.ts) and the plan fields that use it.
import assert from 'node:assert/strict';
import { formatMatcher, parseMatchers } from '../../../schemas/matchers.js';
import { patchPlanSpec } from '../../../schemas/patchplan.js';

const ok = (text: string): unknown => {
  const p = parseMatchers(text);
  assert.ok(p.ok, `${text}: ${p.ok ? '' : p.error}`);
  return p.matchers;
};
const error = (text: string): string => {
  const p = parseMatchers(text);
  assert.ok(!p.ok, `${text} should not parse`);
  return p.error;
};

describe('schemas/matchers: Alertmanager matcher syntax', function () {
  it('parses single matchers, lists with or without braces, quoted and unquoted values', function () {
    assert.deepEqual(ok('severity="critical"'), [{ name: 'severity', op: '=', value: 'critical' }]);
    assert.deepEqual(ok('{alertname=~"Ceph.*", namespace!="kube-system",}'), [
      { name: 'alertname', op: '=~', value: 'Ceph.*' },
      { name: 'namespace', op: '!=', value: 'kube-system' },
    ]);
    assert.deepEqual(ok('job!~node-exporter , instance=a'), [
      { name: 'job', op: '!~', value: 'node-exporter' },
      { name: 'instance', op: '=', value: 'a' },
    ]);
    assert.deepEqual(ok('msg="say \\"hi\\""'), [{ name: 'msg', op: '=', value: 'say "hi"' }]);
  });

  it('refuses what Alertmanager refuses, naming the column', function () {
    assert.match(error('severity'), /expected an operator/);
    assert.match(error('severity=="critical"'), /column 10: expected a label value/);
    assert.match(error('{severity="critical"'), /closing brace/);
    assert.match(error('severity="critical'), /column 10: unterminated quoted string/);
    assert.match(error('a="b" c="d"'), /column 7: expected a comma/);
    assert.match(error('{}'), /no matchers/);
    assert.match(error('alertname=~"(unclosed"'), /not a valid regular expression/);
    assert.match(error('alertname=~"(?=x)"'), /lookaround or a backreference.*RE2/);
  });

  it("formats a matcher as the API's filter parameter takes it", function () {
    assert.equal(formatMatcher({ name: 'alertname', op: '=~', value: 'Ceph.*' }), '"alertname"=~"Ceph.*"');
  });

  it("a plan with a bad matcher is refused with the field's path", function () {
    const r = patchPlanSpec.safeParse({
      target: { talosVersion: 'v1.13.2' },
      talosConfig: { secretRef: { name: 't' } },
      alertGate: { alerts: ['severity="critical"', 'alertname=~Ceph.*"'] },
      silences: [
        { name: 'a', matchers: 'x="y"' },
        { name: 'a', matchers: 'x="z"' },
      ],
    });
    assert.ok(!r.success);
    const issues = r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    assert.ok(
      issues.some((i) => /^alertGate\.alerts\.1: is not an Alertmanager matcher list \(column/.test(i)),
      issues.join('\n'),
    );
    assert.ok(
      issues.some((i) => /^silences\.1\.name: silence "a" is listed more than once/.test(i)),
      issues.join('\n'),
    );
  });
});
