// The committed proto/gen/ must be what the .proto files generate: a stale copy would let the wire
// format drift from the protos that document it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const protoDir = fileURLToPath(new URL('../../../proto', import.meta.url));

function tree(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(relative(root, path), readFileSync(path, 'utf8'));
    }
  };
  walk(root);
  return files;
}

describe('proto/gen', function () {
  this.timeout(60_000);

  it('matches a fresh generation from the .proto files (run `npm run generate:proto` after changing them)', () => {
    const out = mkdtempSync(join(tmpdir(), 'proto-gen-'));
    try {
      execFileSync('bash', [join(protoDir, 'generate.sh'), out], { stdio: ['ignore', 'ignore', 'pipe'] });
      const fresh = tree(out);
      const committed = tree(join(protoDir, 'gen'));
      assert.deepEqual([...committed.keys()].sort(), [...fresh.keys()].sort(), 'the same generated files');
      for (const [path, text] of fresh) assert.equal(committed.get(path), text, `proto/gen/${path} is stale`);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
