// The lab is the product's test oracle: nothing under test/lab may import the product (controller/),
// or a bug there would be shared by both sides of a test and pass.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { importSpecifiers, sourceFiles } from '../../support/source-files.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const labDir = join(repo, 'test', 'lab');
// The demo is a lab client too: it runs the product as a process. It draws its view with the
// product's own status renderer (the one `kangal-patch status` prints), and imports nothing else.
const demoDir = join(repo, 'test', 'demo');
const STATUS_VIEW = join(repo, 'controller', 'core', 'status-view');
const controllerDir = join(repo, 'controller');

function intoController(file: string, spec: string): boolean {
  if (!spec.startsWith('.') && !spec.startsWith('/')) return /^(?:kangal-patch\/)?controller(?:\/|$)/.test(spec);
  const target = resolve(dirname(file), spec);
  return target === controllerDir || target.startsWith(controllerDir + sep);
}

describe('test/lab imports nothing from controller/', () => {
  it('finds the import forms it scans for', () => {
    const sample = [
      "import { a } from '../../../controller/core/x.js';",
      'import type { B } from "../../controller/y.js";',
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

  it('no file under test/lab imports a module under controller/, and test/demo only the status renderer', () => {
    const files = [...sourceFiles(labDir), ...sourceFiles(demoDir)];
    assert.ok(files.length > 20, `scanned ${files.length} files`);
    const statusView = (f: string, spec: string): boolean =>
      f.startsWith(demoDir + sep) && resolve(dirname(f), spec).startsWith(STATUS_VIEW + sep);
    const offenders = files.flatMap((f) =>
      importSpecifiers(readFileSync(f, 'utf8'))
        .filter((spec) => intoController(f, spec) && !statusView(f, spec))
        .map((spec) => `${relative(repo, f)} imports ${spec}`),
    );
    assert.deepEqual(offenders, []);
  });
});
