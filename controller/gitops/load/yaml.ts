// Strict YAML parsing of one file: multi-document, unique keys, no tags, bounded aliases and depth,
// and any YAML error or warning is a problem (unknown tags, for instance, only warn in `yaml`).
import { isAlias, isCollection, isPair, isScalar, LineCounter, parseAllDocuments, type Document, type Node } from 'yaml';
import type { LoadLimits } from './limits.js';

export interface RawProblem {
  offset: number;
  message: string;
}

export interface ParsedDocument {
  doc: Document.Parsed;
  /** Plain JS value of the document, only meaningful when it has no problems. */
  value?: unknown;
  problems: RawProblem[];
}

export interface ParsedFile {
  lineCounter: LineCounter;
  documents: ParsedDocument[];
  /** Problems that belong to the file rather than to a document. */
  problems: RawProblem[];
}

const YAML_OPTIONS = {
  version: '1.2', // core schema: `yes`/`on` stay strings, no sexagesimal numbers, no timestamps
  uniqueKeys: true,
  merge: false,
  prettyErrors: false,
} as const;

export function parseYamlFile(text: string, limits: LoadLimits): ParsedFile {
  const lineCounter = new LineCounter();
  const parsed = parseAllDocuments(text, { ...YAML_OPTIONS, lineCounter });
  const file: ParsedFile = { lineCounter, documents: [], problems: [] };
  if (!Array.isArray(parsed)) return file; // an empty stream: no documents at all
  if (parsed.length > limits.maxDocuments) {
    file.problems.push({ offset: 0, message: `file has ${parsed.length} YAML documents, more than the limit of ${limits.maxDocuments}` });
    return file;
  }
  for (const doc of parsed) file.documents.push(checkDocument(doc, limits));
  return file;
}

function checkDocument(doc: Document.Parsed, limits: LoadLimits): ParsedDocument {
  const problems: RawProblem[] = [];
  for (const e of [...doc.errors, ...doc.warnings]) {
    problems.push({ offset: e.pos[0], message: `YAML ${e.name === 'YAMLWarning' ? 'warning' : 'error'}: ${firstLine(e.message)}` });
  }
  if (problems.length === 0) problems.push(...walk(doc.contents, limits));
  const result: ParsedDocument = { doc, problems };
  if (problems.length === 0) {
    try {
      result.value = doc.toJS({ maxAliasCount: limits.maxAliases });
    } catch (e) {
      problems.push({ offset: doc.contents?.range?.[0] ?? 0, message: `YAML error: ${firstLine(String((e as Error).message))}` });
    }
  }
  return result;
}

/** Depth, tag and alias checks, iterative so hostile depth cannot overflow the stack. */
function walk(root: Node | null, limits: LoadLimits): RawProblem[] {
  const stack: { node: unknown; depth: number }[] = [{ node: root, depth: 0 }];
  let aliases = 0;
  for (let top = stack.pop(); top; top = stack.pop()) {
    const { node, depth } = top;
    if (isPair(node)) {
      stack.push({ node: node.key, depth }, { node: node.value, depth });
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    const n = node as Node;
    const offset = n.range?.[0] ?? 0;
    if (isAlias(n)) {
      if (++aliases > limits.maxAliases) return [{ offset, message: `more than ${limits.maxAliases} YAML aliases in one document` }];
      continue;
    }
    if ((isScalar(n) || isCollection(n)) && n.tag !== undefined) {
      return [{ offset, message: `YAML tags are not allowed (found ${n.tag}); write plain values` }];
    }
    if (isCollection(n)) {
      if (depth + 1 > limits.maxDepth) return [{ offset, message: `YAML nesting is deeper than ${limits.maxDepth} levels` }];
      for (const item of n.items) stack.push({ node: item, depth: depth + 1 });
    }
  }
  return [];
}

function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}
