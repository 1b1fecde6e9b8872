// The PatchPlan document schema with the rules that depend on the operator's configuration.
import type { z } from 'zod';
import { patchPlanDocument } from './patchplan.js';
import { secretNamespaceRule } from './rules.js';

type DocumentSchema = z.ZodType<z.output<typeof patchPlanDocument>, z.input<typeof patchPlanDocument>>;
const cache = new Map<string, DocumentSchema>();

/** The plan document schema for an operator running in `operatorNamespace`. */
export function planDocumentSchema(operatorNamespace: string): DocumentSchema {
  let schema = cache.get(operatorNamespace);
  if (!schema) {
    schema = patchPlanDocument.superRefine(secretNamespaceRule(operatorNamespace), { when: () => true });
    cache.set(operatorNamespace, schema);
  }
  return schema;
}
