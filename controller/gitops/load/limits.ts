// Resource limits for untrusted plan files (gitops.md §7.3): anything from Git is hostile until parsed.

export interface LoadLimits {
  /** Bytes per file, checked before decoding or parsing. */
  maxBytes: number;
  /** YAML documents per file. */
  maxDocuments: number;
  /** Alias nodes (`*name`) per document; expansion is capped by `yaml` too. */
  maxAliases: number;
  /** Nesting depth of collections. `yaml` itself can exhaust memory on very deep flow nesting. */
  maxDepth: number;
}

export const DEFAULT_LIMITS: LoadLimits = {
  maxBytes: 64 * 1024,
  maxDocuments: 64,
  maxAliases: 16,
  maxDepth: 32,
};

/**
 * Caps on what one commit may hold under the plans path. Over any of them the commit is refused as
 * a whole (nothing of it applied, nothing pruned, the plans applied before stay as they are), so a
 * push never half-applies.
 */
export interface RepoLimits {
  /** Plan files (*.yaml, *.yml) under the plans path. */
  maxFiles: number;
  /** Bytes of all plan files together. */
  maxTotalBytes: number;
  /** PatchPlans the commit defines (a file may hold several documents). */
  maxPlans: number;
}

export const DEFAULT_REPO_LIMITS: RepoLimits = {
  maxFiles: 500,
  maxTotalBytes: 32 * 1024 * 1024,
  maxPlans: 500,
};

/**
 * Caps on one fetch of the plans repository, checked on what the server sends before anything is
 * inflated into memory (source/pack.ts). Deflate shrinks repetitive data a thousandfold: the pack's
 * size says nothing about what it inflates to, so both are capped.
 */
export interface FetchLimits {
  /** Bytes received for one fetch: the ref advertisement, then the pack (--git-max-fetch-bytes). */
  maxFetchBytes: number;
  /** The largest object kept; a larger one is never inflated into memory and a file it holds is refused by name. */
  maxObjectBytes: number;
  /** Bytes inflated while reading one pack, every object counted (kept, skipped, delta results). */
  maxInflatedBytes: number;
  /** Objects in one pack. */
  maxObjects: number;
}

export const DEFAULT_FETCH_LIMITS: FetchLimits = {
  maxFetchBytes: 64 * 1024 * 1024,
  maxObjectBytes: 1024 * 1024,
  maxInflatedBytes: 512 * 1024 * 1024,
  maxObjects: 100_000,
};
