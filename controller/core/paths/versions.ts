// Versions as the path planner compares them: semver with or without the leading "v", grouped by
// minor ("1.12"). A pre-release is never picked for an intermediate step.
import semver from 'semver';

/** `major.minor` of a version ("v1.12.6" → "1.12"); undefined for a non-version. */
export function minorOf(version: string): string | undefined {
  const p = semver.parse(version);
  return p ? `${p.major}.${p.minor}` : undefined;
}

const minorParts = (minor: string): [number, number] => {
  const [a, b] = minor.split('.').map(Number);
  return [a ?? 0, b ?? 0];
};

/** Compares two minors numerically (1.9 < 1.10). */
export function compareMinors(a: string, b: string): number {
  const [am, an] = minorParts(a);
  const [bm, bn] = minorParts(b);
  return am === bm ? an - bn : am - bm;
}

/** The minors after `from` up to `to` within one major: ("1.11", "1.13") → ["1.12", "1.13"]. */
export function minorsAfter(from: string, to: string): string[] {
  const [fm, fn] = minorParts(from);
  const [tm, tn] = minorParts(to);
  if (fm !== tm) return [];
  return Array.from({ length: Math.max(0, tn - fn) }, (_, i) => `${fm}.${fn + 1 + i}`);
}

/** The lowest of a non-empty list of versions. */
export function lowest(versions: readonly string[]): string {
  return [...versions].sort(semver.compare)[0] ?? '';
}

/** The newest stable (no pre-release) version of `minor` in `versions`. */
export function latestOfMinor(versions: readonly string[], minor: string): string | undefined {
  const ofMinor = versions.filter(
    (v) => semver.valid(v) !== null && semver.prerelease(v) === null && minorOf(v) === minor,
  );
  return ofMinor.sort(semver.rcompare)[0];
}

/** Whether `versions` holds `version` (semver equality: "1.12.6" and "v1.12.6" are the same). */
export function includesVersion(versions: readonly string[], version: string): boolean {
  return versions.some((v) => semver.valid(v) !== null && semver.eq(v, version));
}

/** Distinct versions, lowest first, as a short list ("v1.11.3, v1.12.1"). */
export function versionList(versions: readonly string[], max = 3): string {
  const distinct = [...new Set(versions)].sort(semver.compare);
  return distinct.length <= max
    ? distinct.join(', ')
    : `${distinct.slice(0, max).join(', ')} and ${distinct.length - max} more`;
}
