// Untrusted text in Markdown (reports, pull requests, Teams and Discord cards) stays text: no link,
// image, HTML, table cell or code span can be made from it.
import assert from 'node:assert/strict';
import { escapeMarkdown, markdownCell, markdownCode, markdownLink } from '../../../controller/core/markdown.js';
import { HOSTILE, assertInert } from './markdown-fixtures.js';

describe('core/markdown', function () {
  it('escapes every character that opens inline markup, and only those', function () {
    const md = markdownCell(HOSTILE);
    assertInert(md);
    assert.equal(
      md,
      'x\\](http://evil) \\<img src=x\\> a\\|b \\`code\\` \\[click\\](http://evil) \\*bold\\* \\~\\~gone\\~\\~ \\_it\\_ \\\\',
    );
    assert.equal(
      markdownCell('worker-1.example v1.12.1 (group db_1.x) 2026-01-01T00:00:00Z'),
      'worker-1.example v1.12.1 (group db\\_1.x) 2026-01-01T00:00:00Z',
    );
  });

  it('a cell is one line', () => assert.equal(markdownCell('a\nb\r\nc\rd'), 'a b c d'));

  it('multi-line text keeps its lines and escapes what starts a block there', function () {
    assert.equal(
      escapeMarkdown('ok\n# heading\n> quote\n- item\n  + item\n1. one\n2) two\n===\nnot # here'),
      'ok\n\\# heading\n\\> quote\n\\- item\n  \\+ item\n1\\. one\n2\\) two\n\\===\nnot # here',
    );
    assertInert(escapeMarkdown(HOSTILE));
  });

  it('a code span outlasts any backticks in it, and escapes pipes in a table cell', function () {
    assert.equal(markdownCode('plans/a.yaml'), '`plans/a.yaml`');
    assert.equal(markdownCode('a`b'), '``a`b``');
    assert.equal(markdownCode('`x``'), '``` `x`` ```');
    assert.equal(markdownCode('a|b', true), '`a\\|b`');
    assert.equal(markdownCode('a\nb'), '`a b`');
  });

  it('a link: its text escaped, its destination unable to end early', function () {
    assert.equal(
      markdownLink('a](x)', 'https://git.example/blob/c/plans/a).yaml'),
      '[a\\](x)](https://git.example/blob/c/plans/a%29.yaml)',
    );
    assert.equal(markdownLink('t', 'https://x/<y> "z"'), '[t](https://x/%3Cy%3E%20%22z%22)');
  });
});
