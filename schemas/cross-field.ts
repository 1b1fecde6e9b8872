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
  /** Stable name, for tests and the docs. */
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

interface BrokenRule {
  rule: CrossFieldRule;
  /** What `validate` prints: the apiserver's message followed by `detail`. */
  message: string;
  /** The part of `message` only `validate` prints ('' when none). */
  detail: string;
}

/** Rules broken by `value`, with their messages, in table order. */
function brokenRules(rules: readonly CrossFieldRule[], value: unknown): BrokenRule[] {
  const self = asObj(value);
  if (!self) return [];
  return rules
    .filter((r) => !r.holds(self))
    .map((rule) => {
      const text = typeof rule.message === 'string' ? rule.message : rule.message.text(self);
      const detail = rule.detail?.(self) ?? '';
      return { rule, message: text + detail, detail };
    });
}

/** Every table attached with `withRules`, for tests and documentation. */
export const ATTACHED_RULES: { schema: z.ZodType; rules: readonly CrossFieldRule[] }[] = [];

/** `schema` checked by `rules` in zod (always, even when fields are invalid, so a user sees every
 *  problem in one pass) and carrying them as CEL for the CRD. */
export function withRules<T extends z.ZodType>(schema: T, rules: readonly CrossFieldRule[]): T {
  const checked = schema
    .superRefine(
      (value, ctx) => {
        for (const { rule, message, detail } of brokenRules(rules, value)) {
          ctx.addIssue({ code: 'custom', path: [...rule.path], message, params: { rule: rule.id, detail } });
        }
      },
      { when: () => true },
    )
    .meta({ 'x-kubernetes-validations': rules.map(toCelValidation) });
  ATTACHED_RULES.push({ schema: checked, rules });
  return checked;
}

/**
 * For a list keyed by `name` (x-kubernetes-list-map-keys): each repeated name reported at
 * `[i, 'name']` as `<what> "<name>" is listed more than once`. Runs even when elements have other
 * problems, so every problem is reported at once.
 */
export function uniqueNames(what: string): [(list: unknown, ctx: z.RefinementCtx) => void, { when: () => boolean }] {
  return [
    (list, ctx) => {
      // Runs even when the list itself is invalid (`when`), so it may not be a list at all.
      if (!Array.isArray(list)) return;
      const seen = new Set<unknown>();
      list.forEach((c, i) => {
        const name = asObj(c)?.name;
        if (typeof name === 'string' && seen.has(name))
          ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `${what} "${name}" is listed more than once` });
        seen.add(name);
      });
    },
    { when: () => true },
  ];
}
