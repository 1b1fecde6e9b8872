// `npm run build` (tsc -p tsconfig.build.json, then bundle.mjs) gives a runnable dist/: laid out as
// the container image lays it out (/app/{package.json,bin,dist}, no node_modules), the entry runs
// the bundle dist/kangal-patch.mjs without tsx. Built into a temporary directory, so the worktree
// keeps no dist/ around; and in a checkout bin/kangal-patch.js runs the sources even when an old
// dist/ is there.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { makeLabDir, type LabDir } from '../lab/process.js';
import { repoRoot } from '../support/manifests.js';
import { layOutProduct } from '../support/product.js';

const run = promisify(execFile);

describe('build: dist/ runs as the image runs it', function () {
  this.timeout(300_000);
  let app: LabDir;

  before(async function () {
    app = makeLabDir('kangal-build');
    await layOutProduct(app.path);
  });
  after(() => app?.remove());

  it('compiles the controller, schemas and proto, and no tests, and bundles the CLI into one file', function () {
    assert.ok(existsSync(join(app.path, 'dist/controller/cli.js')));
    assert.ok(existsSync(join(app.path, 'dist/controller/main.js')));
    assert.ok(!existsSync(join(app.path, 'dist/test')));
    assert.ok(existsSync(join(app.path, 'dist/kangal-patch.mjs')));
  });

  it('`kangal-patch run --help` lists the controller flags from the compiled code', async function () {
    const { stdout } = await run(process.execPath, [join(app.path, 'bin/kangal-patch.js'), 'run', '--help'], {
      cwd: app.path,
    });
    for (const flag of [
      '--kubeconfig',
      '--namespace',
      '--leader-elect',
      '--metrics-bind-address',
      '--health-probe-bind-address',
      '--node-name',
    ])
      assert.ok(stdout.includes(flag), `${flag} in:\n${stdout}`);
  });

  it('`kangal-patch validate` works on the examples from the compiled code', async function () {
    const { stderr } = await run(
      process.execPath,
      [join(app.path, 'bin/kangal-patch.js'), 'validate', join(repoRoot, 'examples/simple-upgrade.yaml')],
      { cwd: app.path },
    );
    assert.match(stderr, /^ok: 1 plan\(s\) in 1 file\(s\), 0 problem\(s\)/);
  });

  it('has no TypeScript sources to fall back on, so the runs above used dist/', function () {
    assert.ok(!existsSync(join(app.path, 'controller')));
  });

  it('has no node_modules, so the runs above used the bundle (dist/controller/cli.js cannot load its dependencies)', async function () {
    assert.ok(!existsSync(join(app.path, 'node_modules')));
    await assert.rejects(
      run(
        process.execPath,
        ['--input-type=module', '-e', `await import(${JSON.stringify(join(app.path, 'dist/controller/cli.js'))})`],
        { cwd: app.path },
      ),
      /ERR_MODULE_NOT_FOUND/,
    );
  });
});

describe('bin/kangal-patch.js: sources in a checkout, the dist/ bundle where only dist/ ships', function () {
  this.timeout(60_000);
  let app: LabDir;

  before(function () {
    app = makeLabDir('kangal-bin');
    mkdirSync(join(app.path, 'bin'));
    mkdirSync(join(app.path, 'controller'));
    mkdirSync(join(app.path, 'dist/controller'), { recursive: true });
    copyFileSync(join(repoRoot, 'bin/kangal-patch.js'), join(app.path, 'bin/kangal-patch.js'));
    writeFileSync(join(app.path, 'package.json'), JSON.stringify({ type: 'module' }));
    symlinkSync(join(repoRoot, 'node_modules'), join(app.path, 'node_modules'));
    // Three CLIs that say which one ran; the TypeScript one uses a type annotation tsx must strip.
    writeFileSync(
      join(app.path, 'controller/cli.ts'),
      "export async function main(args: string[]): Promise<number> { console.log('source', args.join(' ')); return 0; }\n",
    );
    writeFileSync(
      join(app.path, 'dist/controller/cli.js'),
      "export async function main(args) { console.log('dist', args.join(' ')); return 0; }\n",
    );
    writeFileSync(
      join(app.path, 'dist/kangal-patch.mjs'),
      "export async function main(args) { console.log('bundle', args.join(' ')); return 0; }\n",
    );
  });
  after(() => app?.remove());

  it('runs the TypeScript sources when they are next to it, whatever dist/ holds', async function () {
    const { stdout } = await run(process.execPath, [join(app.path, 'bin/kangal-patch.js'), 'validate', 'x'], {
      cwd: app.path,
    });
    assert.equal(stdout.trim(), 'source validate x');
  });

  it('runs the bundle dist/kangal-patch.mjs when there are no sources (the image, the package)', async function () {
    rmSync(join(app.path, 'controller'), { recursive: true });
    const { stdout } = await run(process.execPath, [join(app.path, 'bin/kangal-patch.js'), 'validate', 'x'], {
      cwd: app.path,
    });
    assert.equal(stdout.trim(), 'bundle validate x');
  });

  it('runs dist/controller/cli.js when the build has no bundle', async function () {
    rmSync(join(app.path, 'dist/kangal-patch.mjs'));
    const { stdout } = await run(process.execPath, [join(app.path, 'bin/kangal-patch.js'), 'validate', 'x'], {
      cwd: app.path,
    });
    assert.equal(stdout.trim(), 'dist validate x');
  });
});
