// The README's license list is what `npm run generate` makes of the lockfile now, and every
// production dependency carries a license from the permissive set.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ALLOWED_LICENSES, licenseIds, productionPackages, renderLicenses } from '../../../schemas/licenses.js';

describe('schemas: licenses of production dependencies', function () {
  const lock = readFileSync('package-lock.json', 'utf8');

  it('README.md lists them as the lockfile has them (run npm run generate)', function () {
    const readme = readFileSync('README.md', 'utf8');
    assert.equal(readme, renderLicenses(readme, lock));
  });

  it('takes what npm ci --omit=dev installs: runtime dependencies in, dev tools out', function () {
    const names = new Set(productionPackages(lock).map((p) => p.name));
    for (const runtime of ['@kubernetes/client-node', 'zod', 'yaml', 'isomorphic-git', '@grpc/grpc-js']) assert.ok(names.has(runtime), runtime);
    for (const dev of ['mocha', 'typescript', 'fast-check', 'eslint', 'tsx']) assert.ok(!names.has(dev), dev);
  });

  it('every production dependency declares a permissive license', function () {
    const refused = productionPackages(lock).filter((p) => p.license === '' || !licenseIds(p.license).every((id) => ALLOWED_LICENSES.includes(id)));
    assert.deepEqual(refused.map((p) => `${p.name}@${p.version}: ${p.license || 'no license declared'}`), []);
  });

  it('reads the identifiers of an SPDX expression', function () {
    assert.deepEqual(licenseIds('(MIT AND BSD-3-Clause)'), ['MIT', 'BSD-3-Clause']);
    assert.deepEqual(licenseIds('GPL-3.0-only OR MIT'), ['GPL-3.0-only', 'MIT']);
  });
});
