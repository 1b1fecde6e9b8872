// Strict YAML parsing of one file: multi-document, unique keys, no tags, bounded aliases and depth,
// and any YAML error or warning is a problem (unknown tags, for instance, only warn in `yaml`).
import {
  isAlias,
  isCollection,
  isMap,
  isPair,
  isScalar,
  LineCounter,
  parseAllDocuments,
  type Document,
  type Node,
  type YAMLMap,
  type YAMLSeq,
} from 'yaml';
import type { LoadLimits } from './limits.js';

interface RawProblem {
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
  // Keys are checked for uniqueness in `walk`, in linear time: `yaml`'s own check compares every
  // pair (6,000 keys in a 64 KiB file took 1.5 s), and it lets `1:` and `"1":` both through.
  uniqueKeys: false,
  merge: false,
  prettyErrors: false,
} as const;

export function parseYamlFile(text: string, limits: LoadLimits): ParsedFile {
  const lineCounter = new LineCounter();
  const parsed = parseAllDocuments(text, { ...YAML_OPTIONS, lineCounter });
  const file: ParsedFile = { lineCounter, documents: [], problems: [] };
  if (!Array.isArray(parsed)) return file; // an empty stream: no documents at all
  if (parsed.length > limits.maxDocuments) {
    file.problems.push({
      offset: 0,
      message: `file has ${parsed.length} YAML documents, more than the limit of ${limits.maxDocuments}`,
    });
    return file;
  }
  for (const doc of parsed) file.documents.push(checkDocument(doc, limits));
  return file;
}

function checkDocument(doc: Document.Parsed, limits: LoadLimits): ParsedDocument {
  const problems: RawProblem[] = [];
  // `yaml` reports a stack overflow as an error at wherever the stack ran out, which varies with the
  // caller's stack: report it once, at the document, so the same file always gets the same answer.
  const exhausted = doc.errors.find((e) => e.code === 'RESOURCE_EXHAUSTION');
  if (exhausted) {
    problems.push({
      offset: doc.range[0],
      message: 'YAML is nested or chained too deeply to parse: simplify the structure',
    });
    return { doc, problems };
  }
  for (const e of [...doc.errors, ...doc.warnings]) {
    problems.push({
      offset: e.pos[0],
      message: `YAML ${e.name === 'YAMLWarning' ? 'warning' : 'error'}: ${firstLine(e.message)}`,
    });
  }
  if (problems.length === 0) problems.push(...walk(doc.contents, limits));
  const result: ParsedDocument = { doc, problems };
  if (problems.length === 0) {
    try {
      result.value = doc.toJS({ maxAliasCount: limits.maxAliases });
    } catch (e) {
      problems.push({
        offset: doc.contents?.range?.[0] ?? 0,
        message: `YAML error: ${firstLine(String((e as Error).message))}`,
      });
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
    const offset = nodeOffset(n);
    if (isAlias(n)) {
      if (++aliases > limits.maxAliases)
        return [{ offset, message: `more than ${limits.maxAliases} YAML aliases in one document` }];
      continue;
    }
    if (hasTag(n)) {
      return [{ offset, message: `YAML tags are not allowed (found ${n.tag}); write plain values` }];
    }
    if (isCollection(n)) {
      const problem = checkCollection(n, offset, depth, limits);
      if (problem) return [problem];
      for (const item of n.items) stack.push({ node: item, depth: depth + 1 });
    }
  }
  return [];
}

function nodeOffset(n: Node): number {
  return n.range?.[0] ?? 0;
}

/** A scalar or collection written with an explicit tag (`!!str`, `!Ref`). */
function hasTag(n: Node): boolean {
  return (isScalar(n) || isCollection(n)) && n.tag !== undefined;
}

function checkCollection(
  n: YAMLMap | YAMLSeq,
  offset: number,
  depth: number,
  limits: LoadLimits,
): RawProblem | undefined {
  if (depth + 1 > limits.maxDepth) return { offset, message: `YAML nesting is deeper than ${limits.maxDepth} levels` };
  return isMap(n) ? checkKeys(n) : undefined;
}

/** Keys must be plain values, each once per mapping, compared as the JS object will hold them. */
function checkKeys(map: YAMLMap): RawProblem | undefined {
  const seen = new Set<string>();
  for (const pair of map.items) {
    const key = pair.key as Node | null;
    const offset = key?.range?.[0] ?? map.range?.[0] ?? 0;
    if (key !== null && !isScalar(key))
      return { offset, message: 'YAML keys must be plain values, not lists, mappings or aliases' };
    // What toJS makes of the key: `~` becomes "", `1` and "1" both become "1".
    const name = keyName(key?.value);
    if (seen.has(name)) return { offset, message: `duplicate key "${name}": each key may appear once in a mapping` };
    seen.add(name);
  }
  return undefined;
}

function keyName(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  return typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint'
    ? String(value)
    : JSON.stringify(value);
}

function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}
