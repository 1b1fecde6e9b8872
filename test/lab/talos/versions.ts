// The simulator's own reading of Talos version tags and installer image references. Deliberately
// independent of the product's core: the lab is the product's test oracle, so a bug in the product's
// version math must not be repeated on the simulator side and pass both.
import semver from 'semver';

/**
 * A Talos release tag (`v1.13.9`, `v1.14.0-rc.1`) as a SemVer; undefined for anything else
 * (`latest`, `v1.13`). semver.parse is strict (no coerce: `v1.13` or `foo-1.2.3` are not tags) and
 * accepts the `v` prefix Talos tags carry.
 */
export function talosTag(tag: string): semver.SemVer | undefined {
  if (!/^v\d\S*$/.test(tag)) return undefined; // semver.parse would trim whitespace
  return semver.parse(tag) ?? undefined;
}

/** Whether `tag` is at least v1.<minor>.0[-<pre>] (SemVer order: alpha.N < beta.N < rc.N < final). */
export function versionAtLeast(tag: string, minor: number, pre = ''): boolean {
  const v = talosTag(tag);
  return v !== undefined && semver.gte(v, `1.${minor}.0${pre ? `-${pre}` : ''}`);
}

/** What an installer reference tells the node: the Talos version it installs and, for an Image Factory installer, the schematic. */
export interface LabInstallerRef {
  version: string;
  /** `<platform>-installer[-secureboot]/<64 hex>` or `installer/<64 hex>` on any registry. */
  schematic: string | undefined;
}

// registry host / repository path : tag, optional @sha256 digest.
const INSTALLER_REF = /^([^/\s]+)\/([a-z0-9._/-]+):([A-Za-z0-9._+-]+)(?:@sha256:[0-9a-f]{64})?$/;
const FACTORY_REPO = /(?:^|\/)(?:[a-z0-9]+(?:-[a-z0-9]+)*-)?installer(?:-secureboot)?\/([0-9a-f]{64})$/;

/** Parses `factory.talos.dev/metal-installer/<schematic>:v1.14.0` or `ghcr.io/siderolabs/installer:v1.13.9`; undefined when unusable. */
export function parseInstallerRef(ref: string): LabInstallerRef | undefined {
  const m = INSTALLER_REF.exec(ref);
  if (!m) return undefined;
  const [, , repository = '', tag = ''] = m;
  if (!talosTag(tag)) return undefined;
  return { version: tag, schematic: FACTORY_REPO.exec(repository)?.[1] };
}
