// The license list of docs/licenses.md is what `npm run generate` makes of the lockfile now, every
// production dependency carries a license from the permissive set, and THIRD_PARTY_LICENSES (the
// image's copy of their license texts) covers each of them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  ALLOWED_LICENSES,
  LICENSE_FILE,
  LICENSES_PAGE,
  licenseIds,
  productionPackages,
  renderLicenses,
  renderThirdPartyLicenses,
} from '../../../schemas/licenses.js';

describe('schemas: licenses of production dependencies', function () {
  const lock = readFileSync('package-lock.json', 'utf8');

  it(`${LICENSES_PAGE} lists them as the lockfile has them (run npm run generate)`, function () {
    assert.equal(LICENSES_PAGE, 'docs/licenses.md');
    const page = readFileSync(LICENSES_PAGE, 'utf8');
    assert.equal(page, renderLicenses(page, lock));
  });

  it('takes what npm ci --omit=dev installs: runtime dependencies in, dev tools out', function () {
    const names = new Set(productionPackages(lock).map((p) => p.name));
    for (const runtime of ['@kubernetes/client-node', 'zod', 'yaml', 'isomorphic-git', '@grpc/grpc-js'])
      assert.ok(names.has(runtime), runtime);
    for (const dev of ['mocha', 'typescript', 'fast-check', 'eslint', 'tsx']) assert.ok(!names.has(dev), dev);
  });

  it('every production dependency declares a permissive license', function () {
    const refused = productionPackages(lock).filter(
      (p) => p.license === '' || !licenseIds(p.license).every((id) => ALLOWED_LICENSES.includes(id)),
    );
    assert.deepEqual(
      refused.map((p) => `${p.name}@${p.version}: ${p.license || 'no license declared'}`),
      [],
    );
  });

  it('reads the identifiers of an SPDX expression', function () {
    assert.deepEqual(licenseIds('(MIT AND BSD-3-Clause)'), ['MIT', 'BSD-3-Clause']);
    assert.deepEqual(licenseIds('GPL-3.0-only OR MIT'), ['GPL-3.0-only', 'MIT']);
  });

  it('THIRD_PARTY_LICENSES has every production dependency with its license files, read where npm ci installs it', function () {
    const read: string[] = [];
    const text = renderThirdPartyLicenses(lock, (path) => {
      read.push(path);
      return path === 'node_modules/zod' ? [{ name: 'LICENSE', text: 'MIT License\nCopyright (c) zod authors\n' }] : [];
    });
    const packages = productionPackages(lock);
    assert.deepEqual(
      read,
      packages.map((p) => p.path),
    );
    for (const p of packages)
      assert.ok(text.includes(`\n${p.name}@${p.version} (${p.license})\n`), `${p.name}@${p.version}`);
    assert.ok(!text.includes('\nmocha@'), 'no dev dependency');
    const zod = packages.find((p) => p.name === 'zod');
    assert.match(
      text,
      new RegExp(
        `zod@${zod?.version ?? '?'} \\(MIT\\)\\n=+\\n\\n--- LICENSE ---\\nMIT License\\nCopyright \\(c\\) zod authors\\n`,
      ),
    );
    assert.match(text, /\nyaml@[^\n]*\n=+\n\n\(the package ships no license file; its declared license is above\)\n/);
  });

  it('takes LICENSE, LICENCE.md, COPYING and NOTICE as license files, not the README', function () {
    for (const name of ['LICENSE', 'LICENSE.md', 'licence.txt', 'LICENSE-MIT', 'COPYING', 'NOTICE'])
      assert.ok(LICENSE_FILE.test(name), name);
    for (const name of ['README.md', 'package.json', 'licenses.js']) assert.ok(!LICENSE_FILE.test(name), name);
  });
});
