// Hostile plan text for the Markdown tests (reports, pull request bodies, chat cards).
import assert from 'node:assert/strict';

/** The hostile strings of issue 43, each with what must not survive unescaped. */
export const HOSTILE = 'x](http://evil) <img src=x> a|b `code` [click](http://evil) *bold* ~~gone~~ _it_ \\';

/** Whether `md` holds `c` (a markup character) anywhere without a backslash before it. */
function hasBare(md: string, c: string): boolean {
  for (let i = md.indexOf(c); i >= 0; i = md.indexOf(c, i + 1)) {
    let slashes = 0;
    for (let j = i - 1; j >= 0 && md[j] === '\\'; j--) slashes++;
    if (slashes % 2 === 0) return true;
  }
  return false;
}

/** Asserts the escaped form of HOSTILE: every markup character escaped, nothing else changed. */
export function assertInert(md: string, what = 'text'): void {
  for (const c of ['[', ']', '<', '>', '|', '`', '*', '~', '_'])
    assert.ok(!hasBare(md, c), `${what}: a bare ${c} in ${JSON.stringify(md)}`);
}
