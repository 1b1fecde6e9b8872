// Writes THIRD_PARTY_LICENSES to stdout: the license files of every production dependency installed
// under ROOT/node_modules, listed by ROOT/package-lock.json (schemas/licenses.ts renders it). The
// Dockerfile's build stage runs the compiled copy, `node dist/schemas/third-party-licenses.js`, as
// the image ships the bundle and not node_modules, where these files would otherwise be.
//
// Usage: node dist/schemas/third-party-licenses.js [ROOT] > THIRD_PARTY_LICENSES   (ROOT defaults to .)
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { LICENSE_FILE, type LicenseFile, renderThirdPartyLicenses } from './licenses.js';

const root = resolve(process.argv[2] ?? '.');

function licenseFiles(path: string): LicenseFile[] {
  const dir = join(root, path);
  // A production package missing from node_modules means the install and the lockfile disagree: the image must not ship without its license.
  if (!existsSync(dir)) throw new Error(`${path} is in package-lock.json but not installed under ${root}`);
  return readdirSync(dir)
    .filter((name) => LICENSE_FILE.test(name) && statSync(join(dir, name)).isFile())
    .sort()
    .map((name) => ({ name, text: readFileSync(join(dir, name), 'utf8') }));
}

process.stdout.write(renderThirdPartyLicenses(readFileSync(join(root, 'package-lock.json'), 'utf8'), licenseFiles));
