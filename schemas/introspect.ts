// Finds the field names a schema accepts at a path, for "did you mean" suggestions on unknown fields.
import type { z } from 'zod';

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
};

const defOf = (s: z.ZodType): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

function unwrap(s: z.ZodType): z.ZodType {
  let cur = s;
  for (let i = 0; i < 16; i++) {
    const d = defOf(cur);
    const next = d.innerType ?? (d.type === 'pipe' ? d.in : undefined);
    if (!next) return cur;
    cur = next;
  }
  return cur;
}

/** Field names of the object schema found by following `path` from `root`, or [] if none. */
export function knownKeysAt(root: z.ZodType, path: readonly PropertyKey[]): string[] {
  let cur = unwrap(root);
  for (const seg of path) {
    const d = defOf(cur);
    let next: z.ZodType | undefined;
    if (d.type === 'object') next = d.shape?.[String(seg)];
    else if (d.type === 'array') next = d.element;
    else if (d.type === 'record') next = d.valueType;
    if (!next) return [];
    cur = unwrap(next);
  }
  const d = defOf(cur);
  return d.type === 'object' ? Object.keys(d.shape ?? {}) : [];
}
