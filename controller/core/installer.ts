// Installer image names (reference/talos-api.md §5.1): ghcr for plain releases, the Image Factory
// with a schematic for everything else; and the per-node overrides a Node's annotations ask for
// (a node of another platform or with other extensions than the plan's others).
import type { PatchJobSpec } from '../../schemas/patchjob.js';

/** Schematic of an image with no customization (SHA-256 of `customization: {}\n`), as talosctl uses. */
export const VANILLA_SCHEMATIC = '376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba';

/** Node annotations that override the plan's installer for that node. */
export const INSTALLER_ANNOTATIONS = {
  installer: 'kangalpatch.ozalp.dk/installer',
  schematic: 'kangalpatch.ozalp.dk/schematic',
  secureBoot: 'kangalpatch.ozalp.dk/secure-boot',
} as const;

/** The override annotations as written on a Node (undefined: not set). */
export type NodeInstallerAnnotations = Partial<Record<keyof typeof INSTALLER_ANNOTATIONS, string>>;

export interface InstallerOverride {
  installer?: string;
  schematic?: string;
  secureBoot?: boolean;
}

export interface ResolvedInstaller {
  image: string;
  /** The schematic the image was built with (factory only). */
  schematic: string | undefined;
}

type Target = PatchJobSpec['target'];

/** What the node's Talos API says of it (talosctl's own way to pick a node's installer). */
export interface DetectedNode {
  /** Version's `platform.name`: `metal`, `aws`, `hcloud`, ... (undefined: not read, or not known). */
  platform?: string | undefined;
  /** SecurityState `secureBoot` (undefined: not read). */
  secureBoot?: boolean | undefined;
}

/** Where a factory installer's type and Secure Boot come from: the node's annotations, the plan, the node's own Talos, else `metal` without Secure Boot. */
function installerChoice(
  target: Target,
  override: InstallerOverride,
  detected: DetectedNode,
): { installer: string; secureBoot: boolean } {
  return {
    installer: override.installer ?? target.installer ?? detected.platform ?? 'metal',
    secureBoot: override.secureBoot ?? target.secureBoot ?? detected.secureBoot ?? false,
  };
}

/**
 * Whether the installer of a factory plan's node depends on what its Talos API says: a factory plan
 * without an installer type leaves the platform to each node, and with it the Secure Boot state
 * unless the plan or the node's annotation sets one. A plan naming its installer keeps the plan's
 * choice (Secure Boot off unless asked for).
 */
function needsDetection(target: Target, override: InstallerOverride): { platform: boolean; secureBoot: boolean } {
  const platform = target.source === 'factory' && override.installer === undefined && target.installer === undefined;
  return { platform, secureBoot: platform && override.secureBoot === undefined && target.secureBoot === undefined };
}

/** What a job must read from the node's Talos API to name its installer (nothing when its annotations are malformed: the job fails on them first). */
export function detectionFor(
  target: Target,
  annotations: NodeInstallerAnnotations | undefined,
): { platform: boolean; secureBoot: boolean } {
  const parsed = parseInstallerOverride(target, annotations);
  return 'problem' in parsed ? { platform: false, secureBoot: false } : needsDetection(target, parsed.override);
}

/** What a node brings to its installer: its own schematic, its parsed override annotations, what its Talos API reported. */
interface InstallerNode {
  schematic: string | undefined;
  override?: InstallerOverride | undefined;
  detected?: DetectedNode | undefined;
}

/**
 * The installer image for a node: the node's override annotations first, then the plan's schematic,
 * else the node's own (so extensions survive the upgrade), else the vanilla one. An installer type
 * on the node makes it a factory image even under a ghcr plan (a platform ghcr has no image for).
 * Installer type and Secure Boot the plan leaves open are the node's own (`detected`).
 */
function resolveInstaller(
  target: Target,
  talosVersion: string,
  { schematic: nodeSchematic, override = {}, detected = {} }: InstallerNode,
): ResolvedInstaller {
  if (target.source === 'ghcr' && override.installer === undefined)
    return { image: `ghcr.io/siderolabs/installer:${talosVersion}`, schematic: undefined };
  const schematic = override.schematic ?? target.schematicID ?? nodeSchematic ?? VANILLA_SCHEMATIC;
  const { installer, secureBoot } = installerChoice(target, override, detected);
  const repo = `${installer}-installer${secureBoot ? '-secureboot' : ''}`;
  return { image: `factory.talos.dev/${repo}/${schematic}:${talosVersion}`, schematic };
}

const INSTALLER_TYPE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const SCHEMATIC_ID = /^[0-9a-f]{64}$/;

/** What is wrong with a node's override annotations under this plan's target, or the override they ask for. */
export function parseInstallerOverride(
  target: Target,
  a: NodeInstallerAnnotations | undefined,
): { override: InstallerOverride } | { problem: string } {
  if (a === undefined) return { override: {} };
  const problems: string[] = [];
  const override: InstallerOverride = {};
  if (a.installer !== undefined) {
    if (INSTALLER_TYPE.test(a.installer)) override.installer = a.installer;
    else
      problems.push(
        `${INSTALLER_ANNOTATIONS.installer}: "${clip(a.installer)}" is not an installer type such as "metal", "aws" or "hcloud"`,
      );
  }
  if (a.schematic !== undefined) {
    if (SCHEMATIC_ID.test(a.schematic)) override.schematic = a.schematic;
    else
      problems.push(
        `${INSTALLER_ANNOTATIONS.schematic}: "${clip(a.schematic)}" is not an Image Factory schematic ID (64 lowercase hex characters)`,
      );
  }
  if (a.secureBoot !== undefined) {
    if (a.secureBoot === 'true' || a.secureBoot === 'false') override.secureBoot = a.secureBoot === 'true';
    else problems.push(`${INSTALLER_ANNOTATIONS.secureBoot}: "${clip(a.secureBoot)}" must be "true" or "false"`);
  }
  if (factoryOnly(target, override, a))
    problems.push(
      `${INSTALLER_ANNOTATIONS.schematic} and ${INSTALLER_ANNOTATIONS.secureBoot} need a factory installer: the plan uses ghcr, so set ${INSTALLER_ANNOTATIONS.installer} on the node too`,
    );
  return problems.length > 0 ? { problem: problems.join('; ') } : { override };
}

/** A schematic or Secure Boot on a node of a ghcr plan without an installer type: only factory installers have them. */
function factoryOnly(target: Target, override: InstallerOverride, a: NodeInstallerAnnotations): boolean {
  return (
    (override.schematic !== undefined || override.secureBoot !== undefined) &&
    target.source === 'ghcr' &&
    override.installer === undefined &&
    a.installer === undefined
  );
}

/** A node's installer under the plan's target, its overrides applied; or what is wrong with them. */
export function installerFor(
  target: Target,
  talosVersion: string,
  node: {
    schematic?: string | undefined;
    installerAnnotations?: NodeInstallerAnnotations | undefined;
    detected?: DetectedNode | undefined;
  },
): ResolvedInstaller | { problem: string } {
  const parsed = parseInstallerOverride(target, node.installerAnnotations);
  return 'problem' in parsed
    ? parsed
    : resolveInstaller(target, talosVersion, {
        schematic: node.schematic,
        override: parsed.override,
        detected: node.detected,
      });
}

function clip(v: string): string {
  return v.length > 80 ? `${v.slice(0, 80)}…` : v;
}
