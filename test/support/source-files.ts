// Scanning the repository's own sources: which files there are and what they import.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every JS/TS source file under `dir`, recursively, skipping node_modules. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sourceFiles(p);
    return /\.(?:[cm]?[jt]s|tsx)$/.test(e.name) ? [p] : [];
  });
}

/** Module specifiers of static imports, re-exports, side-effect imports, dynamic import() and require(). */
export function importSpecifiers(text: string): string[] {
  const out: string[] = [];
  const patterns = [
    /\b(?:import|export)\s+(?:type\s+)?[^'"`;]*?\bfrom\s*(['"])([^'"]+)\1/g,
    /\bimport\s*(['"])([^'"]+)\1/g,
    /\bimport\s*\(\s*(['"`])([^'"`]+)\1\s*\)/g,
    /\brequire\s*\(\s*(['"`])([^'"`]+)\1\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) if (m[2] !== undefined) out.push(m[2]);
  return out;
}
