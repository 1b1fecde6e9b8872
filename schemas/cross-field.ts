// Cross-field rules defined once and enforced twice: by zod (`kangal-patch validate`, the GitOps
// loader, the controller) and by the apiserver as CRD `x-kubernetes-validations` (CEL), so an invalid
// plan is refused at `kubectl apply` with the same path and message `validate` prints.
//
// A rule is attached to one object schema with `withRules(schema, rules)`. Its `path` is where the
// problem is reported, relative to that object; it must be static (CRD fieldPaths cannot name a map
// key or list index chosen at run time), so rules about "some element" report on the list or map and
// name the element in the message.
import type { z } from 'zod';

export type Obj = Record<string, unknown>;

export const asObj = (v: unknown): Obj | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;

export interface CrossFieldRule {
  /** Stable name, for tests and the README. */
  id: string;
  /** Where the problem is reported, relative to the object the rule is attached to; [] is the object itself. */
  path: readonly string[];
  /**
   * zod side: true when `self` satisfies the rule. `self` is the object as written (defaults not
   * applied, fields possibly of the wrong type: other problems are reported separately), so a missing
   * field means its default.
   */
  holds: (self: Obj) => boolean;
  /** CEL side: the same condition over the object after the apiserver applied the defaults. */
  cel: string;
  /** The message: one text for both sides, or a function and the CEL messageExpression computing the same text. */
  message: string | { text: (self: Obj) => string; cel: string };
  /** What only `validate` adds, appended to the message: advice CEL cannot compute (edit distance) or
   *  afford (joining names is over the apiserver's cost budget). The apiserver prints the message without it. */
  detail?: (self: Obj) => string | undefined;
}

/** One entry of `x-kubernetes-validations`. */
export interface CelValidation {
  rule: string;
  message?: string;
  messageExpression?: string;
  fieldPath?: string;
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `['groups', 'db.x']` → `.groups['db.x']` (the CRD fieldPath syntax). */
export function celFieldPath(path: readonly string[]): string {
  return path.map((p) => (IDENT.test(p) ? `.${p}` : `['${p}']`)).join('');
}

export function toCelValidation(rule: CrossFieldRule): CelValidation {
  const out: CelValidation = { rule: rule.cel };
  if (typeof rule.message === 'string') out.message = rule.message;
  else out.messageExpression = rule.message.cel;
  if (rule.path.length > 0) out.fieldPath = celFieldPath(rule.path);
  return out;
}

/** The message `validate` prints for a broken rule; the apiserver prints it without `detail`. */
export function ruleMessage(rule: CrossFieldRule, self: Obj): string {
  const text = typeof rule.message === 'string' ? rule.message : rule.message.text(self);
  return text + (rule.detail?.(self) ?? '');
}

/** Rules broken by `value`, with their messages, in table order. */
export function brokenRules(rules: readonly CrossFieldRule[], value: unknown): { rule: CrossFieldRule; message: string }[] {
  const self = asObj(value);
  if (!self) return [];
  return rules.filter((r) => !r.holds(self)).map((rule) => ({ rule, message: ruleMessage(rule, self) }));
}

/** Every table attached with `withRules`, for tests and documentation. */
export const ATTACHED_RULES: { schema: z.ZodType; rules: readonly CrossFieldRule[] }[] = [];

/** `schema` checked by `rules` in zod (always, even when fields are invalid, so a user sees every
 *  problem in one pass) and carrying them as CEL for the CRD. */
export function withRules<T extends z.ZodType>(schema: T, rules: readonly CrossFieldRule[]): T {
  const checked = schema
    .superRefine(
      (value, ctx) => {
        for (const { rule, message } of brokenRules(rules, value)) ctx.addIssue({ code: 'custom', path: [...rule.path], message });
      },
      { when: () => true },
    )
    .meta({ 'x-kubernetes-validations': rules.map(toCelValidation) });
  ATTACHED_RULES.push({ schema: checked, rules });
  return checked;
}
