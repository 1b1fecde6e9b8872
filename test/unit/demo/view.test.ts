// What the demo prints itself (its log's time stamp, the promotion story's columns, soak countdown
// and proposal evidence) is pure functions of their arguments and the time.
import assert from 'node:assert/strict';
import { duration, evidenceLines, sideBySide, soakLine } from '../../demo/view.js';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const at = (s: number): string => new Date(T0 + s * 1000).toISOString();

describe('demo view', () => {
  it('formats durations in seconds, then minutes', () => {
    assert.equal(duration(4_400), '4s');
    assert.equal(duration(65_000), '1m05s');
    assert.equal(duration(NaN), '-');
  });

  it('the soak countdown counts whole seconds down to the eligible time, then says now', () => {
    const soak = { cluster: 'production', version: 'v1.12.5', upstream: 'staging', eligibleTime: at(20) };
    assert.equal(
      soakLine(soak, T0 + 5_500),
      `soak: v1.12.5 runs on staging; production may take it at ${at(20)}: 15 s left`,
    );
    assert.match(soakLine(soak, T0 + 20_000), /: now$/);
    assert.match(soakLine(soak, T0 + 25_000), /: now$/);
  });

  it('two columns: each side cut or padded to half the width, a bar between', () => {
    const lines = sideBySide(['staging', 'x'.repeat(60)], ['production'], 83);
    assert.equal(lines.length, 2);
    assert.equal(lines[0], `${'staging'.padEnd(40)} │ production`);
    assert.equal(lines[1], `${'x'.repeat(39)}… │`);
  });

  it('the evidence of a proposal body, one figure a line, links as their URL', () => {
    const body = [
      '## Talos v1.12.5',
      '',
      '### Promotion evidence',
      '',
      'v1.12.5 completed on every upstream stage.',
      '',
      '| stage | report | nodes | soak window |',
      '| --- | --- | --- | --- |',
      '| staging/template staging-nodes | [status/staging/a.yaml](http://forge/acme/plans/blob/c1/status/staging/a.yaml) @ c1 | 2/2 | A → B |',
      '',
      'If a later rollout fails, KangalPatch comments here.',
    ].join('\n');
    assert.deepEqual(evidenceLines(body), [
      'v1.12.5 completed on every upstream stage.',
      'stage staging/template staging-nodes:',
      '  report: http://forge/acme/plans/blob/c1/status/staging/a.yaml @ c1',
      '  nodes: 2/2',
      '  soak window: A → B',
    ]);
    assert.deepEqual(evidenceLines('no section'), ['(the proposal has no Promotion evidence section)']);
  });
});
