import assert from 'node:assert/strict';
import { parseGoDuration } from '../../../schemas/duration.js';
import { editDistance, suggest } from '../../../schemas/suggest.js';

describe('core: Go durations', function () {
  const valid: [string, number][] = [
    ['0', 0],
    ['300s', 300_000],
    ['5m', 300_000],
    ['168h', 604_800_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['250ms', 250],
    ['1m30s500ms', 90_500],
  ];
  for (const [text, ms] of valid) it(`parses ${text}`, () => assert.equal(parseGoDuration(text), ms));
  for (const text of ['', '5', '-5m', '7d', '1 h', 'h', '1.h', '5M', '+5m']) {
    it(`rejects ${JSON.stringify(text)}`, () => assert.equal(parseGoDuration(text), undefined));
  }
});

describe('core: suggestions', function () {
  it('counts a transposition as one edit', () => assert.equal(editDistance('wrokers', 'workers'), 1));
  it('suggests close names, ignoring case', () =>
    assert.equal(suggest('TALOSVERSION', ['talosVersion', 'source']), 'talosVersion'));
  it('does not suggest distant names', () =>
    assert.equal(suggest('environment', ['matchLabels', 'matchExpressions']), undefined));
});
