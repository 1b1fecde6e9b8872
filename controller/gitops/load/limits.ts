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

/** Caps on what a poll reads from the repository's tree, before any file is parsed. */
export interface RepoLimits {
  /** Plan files (*.yaml, *.yml) under the plans path. */
  maxFiles: number;
  /** Bytes of all plan files together. */
  maxTotalBytes: number;
}

export const DEFAULT_REPO_LIMITS: RepoLimits = {
  maxFiles: 5000,
  maxTotalBytes: 32 * 1024 * 1024,
};
