// The versions a stepwise path may use: stable Talos releases from the releases feed
// (--releases-api-url), or, where it cannot be read (an air-gapped cluster), the tags of the
// installer repository through the registry mirrors; Kubernetes versions from the kubelet image's
// tags (without them the planner uses the support matrix's default Kubernetes of each minor).
import semver from 'semver';
import { isStableTag, stableReleases } from '../core/auto-update/releases.js';
import type { ReleasesClient } from '../forge/releases.js';
import type { RegistryClient } from '../registry/index.js';
import { withTimeout, type OpContext } from '../runtime/context.js';
import type { PathVersionSources } from './path.js';

const INSTALLER_REPOSITORY = 'ghcr.io/siderolabs/installer';
const KUBELET_REPOSITORY = 'ghcr.io/siderolabs/kubelet';
const CALL_MS = 20_000;

const errText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
const stableTags = (tags: readonly string[]): string[] => [...new Set(tags.filter(isStableTag))].sort(semver.compare);

export function pathVersionSources(deps: {
  releases: () => Promise<ReleasesClient>;
  registry: RegistryClient;
}): PathVersionSources {
  const fromRegistry = async (ctx: OpContext, repository: string): Promise<string[]> =>
    stableTags((await deps.registry.listTags(withTimeout(ctx, CALL_MS), repository)).tags);
  return {
    async talosReleases(ctx) {
      let feedError: string;
      try {
        const feed = await (await deps.releases()).list(withTimeout(ctx, CALL_MS));
        return { versions: stableReleases(feed.releases).map((r) => r.tagName), from: 'the releases feed' };
      } catch (err) {
        feedError = errText(err);
      }
      try {
        return {
          versions: await fromRegistry(ctx, INSTALLER_REPOSITORY),
          from: `the tags of ${INSTALLER_REPOSITORY} (the releases feed failed: ${feedError})`,
        };
      } catch (err) {
        throw new Error(
          `the releases feed failed (${feedError}), and so did the installer registry (${errText(err)})`,
          { cause: err },
        );
      }
    },
    async kubernetesVersions(ctx) {
      const versions = await fromRegistry(ctx, KUBELET_REPOSITORY).catch(() => undefined);
      return versions !== undefined && versions.length > 0 ? versions : undefined;
    },
  };
}
