// Installer image names (reference/talos-api.md §5.1): ghcr for plain releases, the Image Factory
// with a schematic for everything else.
import type { PatchJobSpec } from '../../schemas/patchjob.js';

/** Schematic of an image with no customization (SHA-256 of `customization: {}\n`), as talosctl uses. */
export const VANILLA_SCHEMATIC = '376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba';

export interface ResolvedInstaller {
  image: string;
  /** The schematic the image was built with (factory only). */
  schematic: string | undefined;
}

/**
 * The installer image for a node: the plan's schematic, else the node's own (so extensions survive
 * the upgrade), else the vanilla one.
 */
export function resolveInstaller(target: PatchJobSpec['target'], talosVersion: string, nodeSchematic: string | undefined): ResolvedInstaller {
  if (target.source === 'ghcr') return { image: `ghcr.io/siderolabs/installer:${talosVersion}`, schematic: undefined };
  const schematic = target.schematicID ?? nodeSchematic ?? VANILLA_SCHEMATIC;
  const repo = `${target.installer ?? 'metal'}-installer${target.secureBoot ? '-secureboot' : ''}`;
  return { image: `factory.talos.dev/${repo}/${schematic}:${talosVersion}`, schematic };
}
