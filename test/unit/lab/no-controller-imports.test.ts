// The lab is the product's test oracle: nothing under test/lab may import the product (controller/),
// or a bug there would be shared by both sides of a test and pass.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const labDir = join(repo, 'test', 'lab');
const controllerDir = join(repo, 'controller');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sourceFiles(p);
    return /\.(?:[cm]?[jt]s|tsx)$/.test(e.name) ? [p] : [];
  });
}

/** Module specifiers of static imports, re-exports, side-effect imports, dynamic import() and require(). */
function importSpecifiers(text: string): string[] {
  const out: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^'"`;]*?\bfrom\s*(['"])([^'"]+)\1/g,
    /\bimport\s*(['"])([^'"]+)\1/g,
    /\bimport\s*\(\s*(['"`])([^'"`]+)\1\s*\)/g,
    /\brequire\s*\(\s*(['"`])([^'"`]+)\1\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) if (m[2] !== undefined) out.push(m[2]);
  return out;
}

function intoController(file: string, spec: string): boolean {
  if (!spec.startsWith('.') && !spec.startsWith('/')) return /^(?:kangal-patch\/)?controller(?:\/|$)/.test(spec);
  const target = resolve(dirname(file), spec);
  return target === controllerDir || target.startsWith(controllerDir + sep);
}

describe('test/lab imports nothing from controller/', () => {
  it('finds the import forms it scans for', () => {
    const sample = [
      "import { a } from '../../../controller/core/x.js';",
      "import type { B } from \"../../controller/y.js\";",
      "export { c } from '../../controller/z.js';",
      "import '../../controller/side.js';",
      "const m = await import('../../controller/dyn.js');",
      'import {\n  d,\n  e,\n} from "../controller/multi.js";',
    ].join('\n');
    assert.equal(importSpecifiers(sample).filter((s) => s.includes('controller/')).length, 6);
    const file = join(labDir, 'talos', 'node.ts');
    assert.equal(intoController(file, '../../../controller/core/talos-flow.js'), true);
    assert.equal(intoController(file, '../../../proto/gen/machine/machine.js'), false);
    assert.equal(intoController(file, '../fleet/types.js'), false);
    assert.equal(intoController(file, '@grpc/grpc-js'), false);
  });

  it('no file under test/lab imports a module under controller/', () => {
    const files = sourceFiles(labDir);
    assert.ok(files.length > 20, `scanned ${files.length} files`);
    const offenders = files.flatMap((f) =>
      importSpecifiers(readFileSync(f, 'utf8'))
        .filter((spec) => intoController(f, spec))
        .map((spec) => `${relative(repo, f)} imports ${spec}`),
    );
    assert.deepEqual(offenders, []);
  });
});
