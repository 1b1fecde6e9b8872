// Which Talos releases ghcr.io/siderolabs/installer publishes: none from 1.14 on (the Image Factory's
// installers replace it). The plan rule that refuses `source: ghcr` for such a target and the
// auto-update decision that will not propose one to a ghcr template share this one answer.

/** The last Talos minor (of major 1) with an installer on ghcr.io/siderolabs/installer. */
const GHCR_LAST_MINOR = 13;

/** False for v1.14.0 and later, pre-releases included; true for older tags and for what is not a version. */
export function ghcrPublishesInstaller(talosVersion: unknown): boolean {
  const m = typeof talosVersion === 'string' ? /^v?(\d+)\.(\d+)\./.exec(talosVersion) : null;
  if (m === null) return true;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major < 1 || (major === 1 && minor <= GHCR_LAST_MINOR);
}

/** The same test over a `talosVersion` string in CEL (RE2), for the CRD's validation rule. */
export const CEL_GHCR_UNPUBLISHED =
  "self.talosVersion.matches('^v?(1[.](1[4-9]|[2-9][0-9]|[0-9]{3,})|[2-9]|[1-9][0-9]+)[.]')";
