// Reads plan files from the local filesystem for `kangal-patch validate`. The GitOps loop reads
// from the git tree instead and hands the same PlanSource values to the loader.
import { lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PlanSource } from './index.js';
import type { Problem } from './problem.js';

const YAML_FILE = /\.ya?ml$/i;

export interface CollectedFiles {
  sources: PlanSource[];
  /** Symlinks found while walking: the GitOps loop refuses them, so validation does too. */
  problems: Problem[];
  /** Paths given on the command line that do not exist. */
  missing: string[];
}

/** Expands files and directories (recursively, *.yaml / *.yml). Hidden entries (.github, .pre-commit-
 *  config.yaml) are skipped while walking: they are tooling, not plans. */
export async function collectPlanFiles(paths: readonly string[], maxBytes: number): Promise<CollectedFiles> {
  const out: CollectedFiles = { sources: [], problems: [], missing: [] };
  for (const path of paths) {
    const info = await lstat(path).catch(() => undefined);
    if (!info) out.missing.push(path);
    else if (info.isDirectory()) await walk(path, out, maxBytes);
    else await addFile({ path, symlink: info.isSymbolicLink(), size: info.size }, out, maxBytes);
  }
  return out;
}

async function walk(dir: string, out: CollectedFiles, maxBytes: number): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.name.startsWith('.')) continue;
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') await walk(path, out, maxBytes);
    } else if (YAML_FILE.test(entry.name)) {
      const info = await lstat(path);
      await addFile({ path, symlink: entry.isSymbolicLink(), size: info.size }, out, maxBytes);
    }
  }
}

/** A file met on the command line or while walking, as lstat saw it. */
interface FoundFile {
  path: string;
  symlink: boolean;
  size: number;
}

async function addFile({ path, symlink, size }: FoundFile, out: CollectedFiles, maxBytes: number): Promise<void> {
  if (symlink) {
    out.problems.push({
      file: path,
      line: 1,
      column: 1,
      path: '',
      message: 'symbolic links are not followed in a plans repository',
    });
    return;
  }
  // Oversized files are refused from their size alone, without reading them.
  if (size > maxBytes) {
    out.problems.push({
      file: path,
      line: 1,
      column: 1,
      path: '',
      message: `file is ${size} bytes, more than the limit of ${maxBytes} bytes`,
    });
    return;
  }
  const content = await readFile(path);
  out.sources.push({ file: path, content });
}
