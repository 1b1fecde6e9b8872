// Installer image names and per-node overrides (controller/core/installer.ts): which image each
// node gets under the plan's target, and what a wrong annotation says.
import assert from 'node:assert/strict';
import { jobTarget } from '../../../schemas/target.js';
import {
  detectionFor,
  installerFor,
  parseInstallerOverride,
  VANILLA_SCHEMATIC,
} from '../../../controller/core/installer.js';

const NODE_SCHEMATIC = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const ghcr = jobTarget.parse({ talosVersion: 'v1.13.2' });
const factory = jobTarget.parse({ talosVersion: 'v1.14.0', source: 'factory', installer: 'metal' });
const image = (r: ReturnType<typeof installerFor>): string => ('problem' in r ? `problem: ${r.problem}` : r.image);

describe('core/installer: images and per-node overrides', function () {
  it("without overrides: ghcr for a ghcr plan; the node's own schematic (else vanilla) for a factory plan", function () {
    assert.equal(
      image(installerFor(ghcr, 'v1.13.2', { schematic: NODE_SCHEMATIC })),
      'ghcr.io/siderolabs/installer:v1.13.2',
    );
    assert.equal(
      image(installerFor(factory, 'v1.14.0', { schematic: NODE_SCHEMATIC })),
      `factory.talos.dev/metal-installer/${NODE_SCHEMATIC}:v1.14.0`,
    );
    assert.equal(
      image(installerFor(factory, 'v1.14.0', {})),
      `factory.talos.dev/metal-installer/${VANILLA_SCHEMATIC}:v1.14.0`,
    );
  });

  it("the node's annotations win over the plan: installer type, schematic, secure boot", function () {
    const hcloud = {
      schematic: NODE_SCHEMATIC,
      installerAnnotations: { installer: 'hcloud', schematic: OTHER, secureBoot: 'true' },
    };
    assert.equal(
      image(installerFor(factory, 'v1.14.0', hcloud)),
      `factory.talos.dev/hcloud-installer-secureboot/${OTHER}:v1.14.0`,
    );
    assert.equal(
      image(installerFor(factory, 'v1.14.0', { installerAnnotations: { installer: 'aws' } })),
      `factory.talos.dev/aws-installer/${VANILLA_SCHEMATIC}:v1.14.0`,
    );
  });

  it('a factory plan without an installer type leaves platform and Secure Boot to each node, as its Talos API reports them; the plan and annotations still win', function () {
    const open = jobTarget.parse({ talosVersion: 'v1.14.0', source: 'factory' });
    assert.deepEqual(detectionFor(open, undefined), { platform: true, secureBoot: true });
    assert.deepEqual(
      detectionFor(jobTarget.parse({ talosVersion: 'v1.14.0', source: 'factory', secureBoot: false }), undefined),
      { platform: true, secureBoot: false },
    );
    assert.deepEqual(
      detectionFor(open, { installer: 'aws' }),
      { platform: false, secureBoot: false },
      'the annotation names the platform',
    );
    assert.deepEqual(
      detectionFor(open, { installer: 'not a type!' }),
      { platform: false, secureBoot: false },
      'a malformed annotation: the job fails on it first, nothing to read',
    );
    // A plan that names its installer keeps today's choice: no read, Secure Boot off unless asked for.
    assert.deepEqual(detectionFor(factory, undefined), { platform: false, secureBoot: false });
    assert.deepEqual(detectionFor(ghcr, undefined), { platform: false, secureBoot: false });

    assert.equal(
      image(
        installerFor(open, 'v1.14.0', {
          schematic: NODE_SCHEMATIC,
          detected: { platform: 'hcloud', secureBoot: false },
        }),
      ),
      `factory.talos.dev/hcloud-installer/${NODE_SCHEMATIC}:v1.14.0`,
    );
    assert.equal(
      image(installerFor(open, 'v1.14.0', { detected: { platform: 'aws', secureBoot: true } })),
      `factory.talos.dev/aws-installer-secureboot/${VANILLA_SCHEMATIC}:v1.14.0`,
    );
    assert.equal(
      image(
        installerFor(open, 'v1.14.0', {
          detected: { platform: 'aws', secureBoot: true },
          installerAnnotations: { installer: 'metal', secureBoot: 'false' },
        }),
      ),
      `factory.talos.dev/metal-installer/${VANILLA_SCHEMATIC}:v1.14.0`,
    );
    // A node whose platform is not known (maintenance mode, an old Talos): metal, as talosctl defaults.
    assert.equal(
      image(installerFor(open, 'v1.14.0', { detected: {} })),
      `factory.talos.dev/metal-installer/${VANILLA_SCHEMATIC}:v1.14.0`,
    );
  });

  it("an installer annotation makes a ghcr plan's node a factory image (a platform ghcr has no image for), keeping the node's schematic", function () {
    assert.equal(
      image(
        installerFor(ghcr, 'v1.13.2', { schematic: NODE_SCHEMATIC, installerAnnotations: { installer: 'hcloud' } }),
      ),
      `factory.talos.dev/hcloud-installer/${NODE_SCHEMATIC}:v1.13.2`,
    );
  });

  it('says what is wrong with each malformed annotation, and refuses a schematic a ghcr plan cannot carry', function () {
    const bad = parseInstallerOverride(factory, { installer: 'Metal!', schematic: 'abc', secureBoot: 'yes' });
    assert.ok('problem' in bad);
    assert.match(bad.problem, /kangalpatch\.ozalp\.dk\/installer: "Metal!" is not an installer type/);
    assert.match(bad.problem, /kangalpatch\.ozalp\.dk\/schematic: "abc" is not an Image Factory schematic ID/);
    assert.match(bad.problem, /kangalpatch\.ozalp\.dk\/secure-boot: "yes" must be "true" or "false"/);
    const ghcrSchematic = parseInstallerOverride(ghcr, { schematic: OTHER });
    assert.ok('problem' in ghcrSchematic);
    assert.match(
      ghcrSchematic.problem,
      /need a factory installer: the plan uses ghcr, so set kangalpatch\.ozalp\.dk\/installer on the node too/,
    );
    assert.deepEqual(parseInstallerOverride(ghcr, undefined), { override: {} });
  });
});
