// The watch stream's line reading: bounded splitting and what counts as a watch event.
import assert from 'node:assert/strict';
import { LineSplitter, OverlongLine, type SplitLine } from '../../../controller/kube/watch-lines.js';
import { parseWatchLine, snippet } from '../../../controller/kube/watch-stream.js';

const text = (lines: SplitLine[]): string[] =>
  lines.map((l) => (l instanceof OverlongLine ? `OVERLONG(${l.start.toString()})` : l.toString()));

describe('kube/watch-lines LineSplitter', function () {
  it('joins a line split across chunks and splits several lines in one chunk', function () {
    const s = new LineSplitter(1024);
    assert.deepEqual(text(s.push(Buffer.from('{"a":'))), []);
    assert.deepEqual(text(s.push(Buffer.from('1}\n{"b":2}\n{"c"'))), ['{"a":1}', '{"b":2}']);
    assert.deepEqual(text(s.push(Buffer.from(':3}\n'))), ['{"c":3}']);
    assert.equal(s.rest(), undefined);
  });

  it('leaves out empty lines and a lone CR', function () {
    const s = new LineSplitter(1024);
    assert.deepEqual(text(s.push(Buffer.from('\n\r\n{"a":1}\r\n\n'))), ['{"a":1}\r']);
  });

  it('reports a line over the bound once, with its start, skips the rest of it, and reads on', function () {
    const s = new LineSplitter(8);
    assert.deepEqual(text(s.push(Buffer.from('0123'))), []);
    assert.deepEqual(text(s.push(Buffer.from('456789ab'))), ['OVERLONG(0123456789ab)']);
    // Still inside the long line: skipped up to its newline.
    assert.deepEqual(text(s.push(Buffer.from('cdefgh\nok\n'))), ['ok']);
    // Exactly at the bound is fine.
    assert.deepEqual(text(s.push(Buffer.from('12345678\n'))), ['12345678']);
  });

  it('keeps memory bounded: a never-ending line holds nothing past the bound', function () {
    const s = new LineSplitter(1000);
    const found: SplitLine[] = [];
    for (let i = 0; i < 100; i++) found.push(...s.push(Buffer.alloc(100, 0x61)));
    assert.equal(found.length, 1);
    assert.ok(found[0] instanceof OverlongLine);
    assert.equal(s.rest(), undefined);
  });

  it('hands back an unterminated last line at the end', function () {
    const s = new LineSplitter(1024);
    s.push(Buffer.from('{"a":1}\n{"b"'));
    assert.equal(s.rest()?.toString(), '{"b"');
  });
});

describe('kube/watch-stream parseWatchLine', function () {
  const parse = (line: string) => parseWatchLine(Buffer.from(line));

  it('accepts the five event types with an object', function () {
    for (const type of ['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']) {
      assert.deepEqual(parse(JSON.stringify({ type, object: { kind: 'Node' } })), {
        kind: 'event',
        type,
        object: { kind: 'Node' },
      });
    }
  });

  it('calls anything else malformed, quoting the line', function () {
    const cases: [string, string][] = [
      ['<html><body>502 Bad Gateway</body></html>', '<html><body>502 Bad Gateway</body></html>'],
      ['{"type":"ADDED","object":"not an object"}', '{"type":"ADDED","object":"not an object"}'],
      ['{"type":"ADDED","object":[1]}', '{"type":"ADDED","object":[1]}'],
      ['{"type":"ADDED","object":null}', '{"type":"ADDED","object":null}'],
      ['{"type":"RENAMED","object":{}}', '{"type":"RENAMED","object":{}}'],
      ['{"kind":"Status","code":500}', '{"kind":"Status","code":500}'],
      ['null', 'null'],
      ['42', '42'],
    ];
    for (const [line, quoted] of cases) assert.deepEqual(parse(line), { kind: 'malformed', snippet: quoted }, line);
  });

  it('shortens a long line and escapes control characters in the quote', function () {
    const long = parse(`{"type":"ADDED","object":"${'x'.repeat(500)}"}`);
    assert.equal(long.kind, 'malformed');
    assert.equal(long.kind === 'malformed' && long.snippet.length, 121);
    assert.equal(snippet(Buffer.from('a\u001b[31mb\u0000')), 'a\\u001b[31mb\\u0000');
  });
});
