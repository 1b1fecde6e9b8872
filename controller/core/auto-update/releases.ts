// Upstream Talos releases as the auto-update decision sees them (GitHub's list-releases shape,
// reduced), and which of them count: stable only.
import semver from 'semver';

/** One entry of GET /repos/siderolabs/talos/releases, reduced to what the decision needs. */
export interface Release {
  tagName: string;
  draft: boolean;
  prerelease: boolean;
  /** epoch ms of published_at; undefined for unpublished (draft) releases. */
  publishedAt: number | undefined;
  htmlUrl: string;
}

/** `vX.Y.Z` exactly: no pre-release or build suffix, no leading zeros (semver's own rule). */
const STABLE_TAG = /^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;

/** A tag that names a stable version (`v1.12.4`), as release tags and image tags do. */
export const isStableTag = (tag: string): boolean => STABLE_TAG.test(tag) && semver.valid(tag) !== null;

function isStableRelease(r: Release): boolean {
  return !r.draft && !r.prerelease && r.publishedAt !== undefined && isStableTag(r.tagName);
}

/** Stable releases, newest version first; a tag listed twice counts once. */
export function stableReleases(releases: readonly Release[]): Release[] {
  const byTag = new Map<string, Release>();
  for (const r of releases) if (isStableRelease(r) && !byTag.has(r.tagName)) byTag.set(r.tagName, r);
  return [...byTag.values()].sort((a, b) => semver.rcompare(a.tagName, b.tagName));
}

/** The lowest version of a list (undefined entries and non-versions ignored). */
export function lowestVersion(versions: readonly (string | undefined)[]): string | undefined {
  const valid = versions.filter((v): v is string => v !== undefined && semver.valid(v) !== null);
  return valid.sort(semver.compare)[0];
}
