// The Talos ↔ Kubernetes support matrix and the upgrade-path rules, copied from the reference
// (reference/talos-api.md §6: Talos docs support-matrix.mdx per version, and
// pkg/machinery/compatibility/talosXYZ in Talos release-1.14). Talos newer than the table is
// "unchecked": the controller cannot know what it supports.
import semver from 'semver';

export type Verdict = { ok: true } | { ok: false; reason: string } | { unchecked: true; reason: string };

export interface SupportRow {
  /** Talos minor, "1.13". */
  talos: string;
  /** Date of v1.N.0; undefined while the minor is not final. */
  released: string | undefined;
  /** Kubernetes minors supported according to the Talos documentation (what this controller enforces). */
  kubernetes: { min: string; max: string };
  /** Min/MaximumKubernetesVersion in Talos's own code (informational: where it differs from the docs). */
  kubernetesInCode: { min: string; max: string };
  /** Default Kubernetes version of that Talos branch. */
  defaultKubernetes: string;
  /** MinimumHostUpgradeVersion: the oldest Talos its installer upgrades from. */
  upgradeFromAtLeast: string;
}

/**
 * Talos 1.10–1.14. 1.14 final: v1.14.0 released 2026-09-03 (siderolabs/talos#14229, "This is the
 * official v1.14.0 release"); its default Kubernetes 1.37.0 and the 6 minors (1.32–1.37) its code
 * accepts are those of pkg/machinery/constants in v1.14.x.
 */
export const SUPPORT_MATRIX: readonly SupportRow[] = [
  {
    talos: '1.10',
    released: '2025-04-30',
    kubernetes: { min: '1.28', max: '1.33' },
    kubernetesInCode: { min: '1.28', max: '1.33' },
    defaultKubernetes: '1.33.6',
    upgradeFromAtLeast: '1.8.0',
  },
  {
    talos: '1.11',
    released: '2025-09-01',
    kubernetes: { min: '1.29', max: '1.34' },
    kubernetesInCode: { min: '1.29', max: '1.34' },
    defaultKubernetes: '1.34.1',
    upgradeFromAtLeast: '1.9.0',
  },
  {
    talos: '1.12',
    released: '2025-12-22',
    kubernetes: { min: '1.30', max: '1.35' },
    kubernetesInCode: { min: '1.30', max: '1.35' },
    defaultKubernetes: '1.35.4',
    upgradeFromAtLeast: '1.10.0',
  },
  {
    talos: '1.13',
    released: '2026-04-27',
    kubernetes: { min: '1.31', max: '1.36' },
    kubernetesInCode: { min: '1.31', max: '1.36' },
    defaultKubernetes: '1.36.3',
    upgradeFromAtLeast: '1.11.0',
  },
  {
    talos: '1.14',
    released: '2026-09-03',
    kubernetes: { min: '1.33', max: '1.37' },
    kubernetesInCode: { min: '1.32', max: '1.37' },
    defaultKubernetes: '1.37.0',
    upgradeFromAtLeast: '1.12.0',
  },
];

const FIRST = SUPPORT_MATRIX[0]?.talos ?? '';
const LAST = SUPPORT_MATRIX.at(-1)?.talos ?? '';

interface Parsed {
  major: number;
  minor: number;
  patch: number;
}

function parse(v: string): Parsed | undefined {
  const p = semver.parse(v);
  return p ? { major: p.major, minor: p.minor, patch: p.patch } : undefined;
}

const notAVersion = (what: string, v: string): Verdict => ({
  ok: false,
  reason: `${what} version "${v}" is not a version such as "v1.13.2"`,
});
/** minor as a comparable number within one major: 1.9 < 1.10. */
const minorKey = (minor: string): [number, number] => {
  const [a, b] = minor.split('.').map(Number);
  return [a ?? 0, b ?? 0];
};
const inRange = (v: Parsed, range: { min: string; max: string }): boolean => {
  const [minMajor, min] = minorKey(range.min);
  const [maxMajor, max] = minorKey(range.max);
  return v.major === minMajor && v.major === maxMajor && v.minor >= min && v.minor <= max;
};

/** The row of a Talos version (any patch or pre-release of the minor). */
export function supportRow(talosVersion: string): SupportRow | undefined {
  const t = parse(talosVersion);
  return t ? SUPPORT_MATRIX.find((r) => r.talos === `${t.major}.${t.minor}`) : undefined;
}

/**
 * What the table does not know of these stable Talos versions (a releases feed or the installer's
 * tags): a minor newer than its last row, or a row it still takes for unreleased. One sentence per
 * minor, so the controller can say the table is behind instead of going stale silently.
 */
export function matrixGaps(stableVersions: readonly string[], table: readonly SupportRow[] = SUPPORT_MATRIX): string[] {
  const newest = new Map<string, string>();
  for (const v of stableVersions) {
    const p = semver.parse(v);
    if (p === null || p.prerelease.length > 0) continue;
    const minor = `${p.major}.${p.minor}`;
    const known = newest.get(minor);
    if (known === undefined || semver.gt(v, known)) newest.set(minor, v);
  }
  const first = table[0]?.talos ?? '';
  const last = table.at(-1)?.talos ?? '';
  const [lastMajor, lastMinor] = minorKey(last);
  return [...newest]
    .sort(([, a], [, b]) => semver.compare(a, b))
    .flatMap(([minor, v]) => {
      const row = table.find((r) => r.talos === minor);
      if (row !== undefined)
        return row.released === undefined
          ? [`Talos ${minor} is released (${v}), the support matrix still takes it for a pre-release`]
          : [];
      const [major, m] = minorKey(minor);
      return major > lastMajor || (major === lastMajor && m > lastMinor)
        ? [`Talos ${minor} (${v}) is newer than the support matrix (${first}–${last}) knows`]
        : [];
    });
}

/** Whether Talos `talosVersion` supports Kubernetes `kubernetesVersion` (documented range). */
export function kubernetesSupported(talosVersion: string, kubernetesVersion: string): Verdict {
  const t = parse(talosVersion);
  if (!t) return notAVersion('Talos', talosVersion);
  const k = parse(kubernetesVersion);
  if (!k) return notAVersion('Kubernetes', kubernetesVersion);
  const row = supportRow(talosVersion);
  if (!row) {
    const [firstMajor, firstMinor] = minorKey(FIRST);
    const side = t.major < firstMajor || (t.major === firstMajor && t.minor < firstMinor) ? 'older' : 'newer';
    return {
      unchecked: true,
      reason: `Talos ${talosVersion} is ${side} than the built-in support matrix (Talos ${FIRST}–${LAST}): Kubernetes ${kubernetesVersion} is not checked`,
    };
  }
  if (inRange(k, row.kubernetes)) return { ok: true };
  const codeNote = inRange(k, row.kubernetesInCode)
    ? ` (Talos ${row.talos}'s own check still accepts ${k.major}.${k.minor}, but the documentation does not support it)`
    : '';
  return {
    ok: false,
    reason: `Talos ${row.talos} supports Kubernetes ${row.kubernetes.min} to ${row.kubernetes.max}, not ${kubernetesVersion}${codeNote}`,
  };
}

export interface TalosPathOptions {
  /** target.allowTalosDowngrade: a downgrade is then allowed, but not checked. */
  allowDowngrade?: boolean;
}

/**
 * Whether Talos can go from `from` to `to` in one step: within a minor or to the next minor only.
 * Talos's installer would skip one minor, but its documentation asks for every intermediate minor
 * (migrations are tested between adjacent minors only), and so does this controller.
 */
export function talosUpgradePath(from: string, to: string, options: TalosPathOptions = {}): Verdict {
  const f = parse(from);
  if (!f) return notAVersion('Talos', from);
  const t = parse(to);
  if (!t) return notAVersion('Talos', to);
  if (semver.lt(to, from)) {
    return options.allowDowngrade
      ? {
          unchecked: true,
          reason: `Talos ${from} → ${to} is a downgrade: allowed by target.allowTalosDowngrade, not checked against the support matrix`,
        }
      : { ok: false, reason: `Talos ${from} → ${to} is a downgrade: set target.allowTalosDowngrade: true to allow it` };
  }
  if (t.major !== f.major) {
    return {
      unchecked: true,
      reason: `Talos ${from} → ${to} changes the major version: not covered by the built-in support matrix`,
    };
  }
  if (t.minor - f.minor <= 1) return { ok: true };
  const between = Array.from({ length: t.minor - f.minor - 1 }, (_, i) => `${f.major}.${f.minor + 1 + i}`);
  const stages = [from, ...between.map((m) => `the latest v${m}.x`), to].join(' → ');
  const row = supportRow(to);
  const installer = !row
    ? ''
    : semver.gte(`${f.major}.${f.minor}.${f.patch}`, row.upgradeFromAtLeast)
      ? `; the v${row.talos} installer itself accepts hosts from v${row.upgradeFromAtLeast}, but Talos tests migrations between adjacent minor versions only`
      : `; the v${row.talos} installer refuses hosts older than v${row.upgradeFromAtLeast}`;
  return {
    ok: false,
    reason: `Talos ${from} → ${to} skips ${between.join(', ')}: upgrade one minor version at a time, ${stages} (one plan per step)${installer}`,
  };
}

/** Whether Kubernetes can go from `from` to `to` in one upgrade: same minor or the next, never down. */
export function kubernetesUpgradePath(from: string, to: string): Verdict {
  const f = parse(from);
  if (!f) return notAVersion('Kubernetes', from);
  const t = parse(to);
  if (!t) return notAVersion('Kubernetes', to);
  if (semver.lt(to, from)) return { ok: false, reason: `Kubernetes cannot be downgraded: ${from} → ${to}` };
  if (t.major !== f.major)
    return { ok: false, reason: `Kubernetes ${from} → ${to} changes the major version: not a supported upgrade` };
  if (t.minor - f.minor <= 1) return { ok: true };
  const between = Array.from({ length: t.minor - f.minor - 1 }, (_, i) => `${f.major}.${f.minor + 1 + i}`);
  const stages = [from, ...between.map((m) => `v${m}.x`), to].join(' → ');
  return {
    ok: false,
    reason: `Kubernetes ${from} → ${to} skips ${between.join(', ')}: Kubernetes moves at most one minor version per upgrade, ${stages}`,
  };
}
