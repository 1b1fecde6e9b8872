// `kangal-patch validate` through main() (in-process) and through the bin shim (real process).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { main } from '../../controller/cli.js';
import { planYaml } from './schemas/plan-fixtures.js';

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

describe('cli: kangal-patch validate', function () {
  let dir: string;
  before(function () {
    dir = mkdtempSync(join(tmpdir(), 'kp-validate-'));
    mkdirSync(join(dir, 'plans', 'prod'), { recursive: true });
    writeFileSync(
      join(dir, 'plans', 'prod', 'good.yaml'),
      planYaml(() => undefined),
    );
    writeFileSync(join(dir, 'plans', 'notes.txt'), 'not yaml, ignored');
    writeFileSync(
      join(dir, 'bad.yaml'),
      planYaml((d) => ((d.metadata.name = 'bad'), (d.spec.paused = 'no'))),
    );
    writeFileSync(
      join(dir, 'other-ns.yaml'),
      planYaml(
        (d) => ((d.metadata.name = 'ns'), (d.spec.talosConfig = { secretRef: { name: 's', namespace: 'ops' } })),
      ),
    );
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 0 for a directory of valid plans', async function () {
    const r = await run(['validate', join(dir, 'plans')]);
    assert.equal(r.code, 0);
    assert.equal(r.out, '');
    assert.equal(r.err, 'ok: 1 plan(s) in 1 file(s), 0 problem(s)\n');
  });

  it('exits 1 and prints file:line:col: path: message for an invalid plan', async function () {
    const file = join(dir, 'bad.yaml');
    const r = await run(['validate', file]);
    assert.equal(r.code, 1);
    assert.equal(r.out, `${file}:11:11: spec.paused: must be true or false, not the string "no"\n`);
  });

  it('prints a JSON list with --output json', async function () {
    const file = join(dir, 'bad.yaml');
    const r = await run(['validate', '--output', 'json', file, join(dir, 'plans')]);
    assert.equal(r.code, 1);
    assert.deepEqual(JSON.parse(r.out), [
      { file, line: 11, column: 11, path: 'spec.paused', message: 'must be true or false, not the string "no"' },
    ]);
  });

  it('checks the Secret namespace against --namespace', async function () {
    const file = join(dir, 'other-ns.yaml');
    assert.equal((await run(['validate', file])).code, 1);
    assert.equal((await run(['validate', '--namespace', 'ops', file])).code, 0);
  });

  it('reports symbolic links instead of following them', async function () {
    const link = join(dir, 'links');
    mkdirSync(link);
    symlinkSync(join(dir, 'bad.yaml'), join(link, 'linked.yaml'));
    const r = await run(['validate', link]);
    assert.equal(r.code, 1);
    assert.equal(r.out, `${join(link, 'linked.yaml')}:1:1: symbolic links are not followed in a plans repository\n`);
  });

  it('exits 2 on usage errors: no paths, a missing path, an unknown output format, an unknown option', async function () {
    assert.equal((await run(['validate'])).code, 2);
    assert.equal((await run(['validate', join(dir, 'missing.yaml')])).code, 2);
    assert.equal((await run(['validate', '--output', 'xml', dir])).code, 2);
    assert.equal((await run(['validate', '--bogus', dir])).code, 2);
    assert.equal((await run(['frobnicate'])).code, 2);
  });

  it('runs as a process through bin/kangal-patch.js with the same exit codes', async function () {
    this.timeout(30_000);
    const exec = promisify(execFile);
    const ok = await exec(process.execPath, ['bin/kangal-patch.js', 'validate', 'examples']);
    assert.match(ok.stderr, /^ok: \d+ plan\(s\)/);
    await assert.rejects(exec(process.execPath, ['bin/kangal-patch.js', 'validate', join(dir, 'bad.yaml')]), {
      code: 1,
    });
    await assert.rejects(exec(process.execPath, ['bin/kangal-patch.js', 'validate']), { code: 2 });
  });
});
