// Maps a field path (from zod) back to a position in the YAML source.
import { isAlias, isMap, isScalar, isSeq, type Document, type Node, type YAMLMap, type YAMLSeq } from 'yaml';

type Step = { node: unknown; keyOffset: number } | undefined;

/** One path segment down: into a map value (remembering its key) or a sequence item. */
function step(doc: Document.Parsed, node: unknown, seg: PropertyKey): Step {
  const cur = isAlias(node) ? node.resolve(doc) : node;
  if (isMap(cur)) return stepIntoMap(cur, seg);
  if (isSeq(cur) && typeof seg === 'number') return stepIntoSeq(cur, seg);
  return undefined;
}

/** The value under key `seg`, remembering where its key is written. */
function stepIntoMap(cur: YAMLMap<unknown, unknown>, seg: PropertyKey): Step {
  const pair = cur.items.find((p) => isScalar(p.key) && String(p.key.value) === String(seg));
  const offset = (pair?.key as Node | undefined)?.range?.[0];
  return pair && offset !== undefined ? { node: pair.value, keyOffset: offset } : undefined;
}

/** The item at index `seg`; an item has no key, so its own offset stands in for one. */
function stepIntoSeq(cur: YAMLSeq<unknown>, seg: number): Step {
  const item = cur.items[seg] as Node | undefined;
  const offset = item?.range?.[0];
  return item && offset !== undefined ? { node: item, keyOffset: offset } : undefined;
}

/** Offset of the value at `path`, or of its key when `atKey`; falls back to the key of the deepest
 *  existing ancestor (a missing field is reported where its parent is written). */
export function locate(doc: Document.Parsed, path: readonly PropertyKey[], atKey = false): number {
  let node: unknown = doc.contents;
  let keyOffset = (doc.contents as Node | null)?.range?.[0] ?? 0;
  for (const seg of path) {
    const next = step(doc, node, seg);
    if (!next) return keyOffset;
    ({ node, keyOffset } = next);
  }
  if (atKey) return keyOffset;
  return (node as Node | null)?.range?.[0] ?? keyOffset;
}
