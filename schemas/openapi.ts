// zod → OpenAPI v3 schema acceptable to the apiserver as a *structural* CRD schema, and zod → JSON
// Schema for editors. Kubernetes forbids additionalProperties next to properties, has no
// propertyNames, and evaluates patterns with RE2, so those parts of zod's output are adjusted here.
import { z } from 'zod';

const SAFE_INT = Number.MAX_SAFE_INTEGER;
type Json = Record<string, unknown>;

function forKubernetes(schema: Json): void {
  if (schema.properties !== undefined && schema.additionalProperties === false) delete schema.additionalProperties;
  delete schema.propertyNames;
  if (schema.maximum === SAFE_INT) delete schema.maximum;
  if (schema.minimum === -SAFE_INT) delete schema.minimum;
  // zod's date-time pattern uses lookarounds RE2 lacks; the apiserver checks the format itself.
  if (schema.format === 'date-time') delete schema.pattern;
}

/** OpenAPI 3.0 schema of the input side of `schema` (defaults are applied by the apiserver). */
export function toCrdSchema(schema: z.ZodType): Json {
  const out = z.toJSONSchema(schema, {
    target: 'openapi-3.0',
    io: 'input',
    override: (ctx) => forKubernetes(ctx.jsonSchema as Json),
  }) as Json;
  delete out.$schema;
  return out;
}

/** Draft-07 JSON Schema for yaml-language-server; keeps additionalProperties: false so editors flag
 *  unknown fields, and drops the Kubernetes-only keywords. */
export function toEditorSchema(schema: z.ZodType, id: string, title: string): Json {
  const out = z.toJSONSchema(schema, {
    target: 'draft-7',
    io: 'input',
    override: (ctx) => {
      const s = ctx.jsonSchema as Json;
      for (const key of Object.keys(s)) if (key.startsWith('x-kubernetes-')) delete s[key];
      if (s.maximum === SAFE_INT) delete s.maximum;
      if (s.minimum === -SAFE_INT) delete s.minimum;
    },
  }) as Json;
  return { $schema: out.$schema, $id: id, title, ...out };
}
