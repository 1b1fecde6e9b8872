import assert from 'node:assert/strict';
import { decodePlanBytes, findExcessiveNesting } from '../../../controller/gitops/load/prescan.js';

describe('gitops/load: pre-scan of raw plan files', function () {
  it('ignores brackets inside quotes and comments', function () {
    const text = `a: "${'['.repeat(50)}"\nb: '${'{'.repeat(50)}'\n# ${'['.repeat(50)}\nc: it's [1, [2]]\n`;
    assert.equal(findExcessiveNesting(text, 32), undefined);
  });
  it('points at the bracket that goes one level too deep', function () {
    assert.equal(findExcessiveNesting(`x: ${'['.repeat(4)}`, 3), 6);
  });
  it('counts compact block entries on one line', function () {
    assert.equal(findExcessiveNesting('- - - x\n', 2), 0);
    assert.equal(findExcessiveNesting('- - - x\n', 3), undefined);
  });
  it('refuses oversize input before decoding it', function () {
    assert.deepEqual(decodePlanBytes(new Uint8Array(11), 10), {
      ok: false,
      message: 'file is 11 bytes, more than the limit of 10 bytes',
    });
  });
});
