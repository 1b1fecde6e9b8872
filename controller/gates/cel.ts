// The CEL side of health checks: the only importer of @bufbuild/cel. An expression is compiled once
// (syntax, and every free variable must be a top-level field of a Kubernetes object) and evaluated
// over each matched object, whose top-level fields are the variables, as tuppr users write them:
// `status.conditions.exists(c, c.type == "Ready" && c.status == "True")`, `has(status.robustness)`.
import { CelScalar, celEnv, isCelError, isCelList, isCelMap, parse, plan, type CelInput } from '@bufbuild/cel';
import type { ObjectVerdict } from '../core/gates/health.js';

type Expr = ReturnType<typeof parse>['expr'];
type Obj = Record<string, unknown>;

/** The variables an expression may use: the usual top-level fields of an object, and `self` (the
 *  whole object, as in CRD validation rules). Absent ones are bound to an empty map, so `has(status.x)`
 *  is false on an object without status instead of an error. */
export const OBJECT_VARIABLES = ['apiVersion', 'kind', 'metadata', 'spec', 'status', 'data', 'stringData', 'binaryData', 'type', 'self'] as const;
const STRING_VARIABLES = new Set(['apiVersion', 'kind', 'type']);
/** Identifiers CEL itself defines (type names used with type()). */
const CEL_IDENTIFIERS = new Set(['int', 'uint', 'double', 'bool', 'string', 'bytes', 'list', 'map', 'null_type', 'type', 'dyn']);

const env = celEnv({ variables: Object.fromEntries(OBJECT_VARIABLES.map((v) => [v, CelScalar.DYN])) });

export type Evaluator = (object: Obj) => { passed: boolean; value: string };
export type Compiled = { ok: true; evaluate: Evaluator } | { ok: false; error: string };

const cache = new Map<string, Compiled>();
const MAX_CACHE = 512;

/** Compiles (and caches) an expression; the error is the parser's (`1:10: found + but expecting ...`)
 *  or names the unknown variable. */
export function compileExpression(source: string): Compiled {
  const hit = cache.get(source);
  if (hit) return hit;
  const compiled = compileUncached(source);
  if (cache.size >= MAX_CACHE) cache.clear();
  cache.set(source, compiled);
  return compiled;
}

function compileUncached(source: string): Compiled {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (err) {
    return { ok: false, error: (err instanceof Error ? err.message : String(err)).replace(/^<input>:/, '') };
  }
  const unknown = [...freeIdentifiers(parsed.expr, new Set())].filter((n) => !(OBJECT_VARIABLES as readonly string[]).includes(n) && !CEL_IDENTIFIERS.has(n));
  if (unknown.length > 0) {
    return { ok: false, error: `undeclared reference to "${unknown[0] ?? ''}": the variables are the object's top-level fields (${OBJECT_VARIABLES.filter((v) => v !== 'self').join(', ')}) and self` };
  }
  let run: (bindings: Record<string, CelInput>) => unknown;
  try {
    run = plan(env, parsed);
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  return {
    ok: true,
    evaluate: (object) => {
      const bindings: Record<string, CelInput> = { self: object as CelInput };
      for (const v of OBJECT_VARIABLES) {
        if (v === 'self') continue;
        const value = object[v];
        bindings[v] = (value ?? (STRING_VARIABLES.has(v) ? '' : {})) as CelInput;
      }
      const result = run(bindings);
      if (isCelError(result)) return { passed: false, value: `error: ${result.message}` };
      if (typeof result === 'boolean') return { passed: result, value: String(result) };
      return { passed: false, value: `${show(result)} (not a bool)` };
    },
  };
}

/** Identifiers the expression reads that no comprehension binds. */
function freeIdentifiers(e: Expr | undefined, bound: ReadonlySet<string>, out = new Set<string>()): Set<string> {
  if (!e) return out;
  const k = e.exprKind;
  switch (k.case) {
    case 'identExpr':
      if (!bound.has(k.value.name)) out.add(k.value.name);
      break;
    case 'selectExpr':
      freeIdentifiers(k.value.operand, bound, out);
      break;
    case 'callExpr':
      freeIdentifiers(k.value.target, bound, out);
      for (const a of k.value.args) freeIdentifiers(a, bound, out);
      break;
    case 'listExpr':
      for (const el of k.value.elements) freeIdentifiers(el, bound, out);
      break;
    case 'structExpr':
      for (const en of k.value.entries) {
        if (en.keyKind.case === 'mapKey') freeIdentifiers(en.keyKind.value, bound, out);
        freeIdentifiers(en.value, bound, out);
      }
      break;
    case 'comprehensionExpr': {
      const c = k.value;
      freeIdentifiers(c.iterRange, bound, out);
      freeIdentifiers(c.accuInit, bound, out);
      const inner = new Set([...bound, c.iterVar, c.iterVar2, c.accuVar].filter((v) => v !== ''));
      freeIdentifiers(c.loopCondition, inner, out);
      freeIdentifiers(c.loopStep, inner, out);
      freeIdentifiers(c.result, inner, out);
      break;
    }
    default:
      break;
  }
  return out;
}

const MAX_VALUE = 120;

/** A CEL value for a message, shortened. */
function show(value: unknown): string {
  let text: string;
  if (typeof value === 'string') text = JSON.stringify(value);
  else if (typeof value === 'bigint' || typeof value === 'number') text = String(value);
  else if (value === null) text = 'null';
  else if (isCelList(value)) text = `a list of ${value.size}`;
  else if (isCelMap(value)) text = `a map of ${value.size}`;
  else text = typeof value === "boolean" ? String(value) : typeof value;
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE)}…` : text;
}

/** `namespace/name` or `name`. */
export function objectRef(object: Obj): string {
  const md = (object.metadata ?? {}) as { name?: unknown; namespace?: unknown };
  const name = typeof md.name === 'string' ? md.name : '?';
  return typeof md.namespace === 'string' && md.namespace !== '' ? `${md.namespace}/${name}` : name;
}

/** Each object's verdict under a compiled expression. */
export function verdicts(evaluate: Evaluator, objects: readonly Obj[]): ObjectVerdict[] {
  return objects.map((o) => ({ ref: objectRef(o), ...evaluate(o) }));
}

export interface ExpressionProblem {
  /** e.g. ['spec', 'healthChecks', 2, 'expr'] */
  path: (string | number)[];
  message: string;
}

/** Every health check expression that does not compile, for the plan loader and the controller. */
export function expressionProblems(spec: { healthChecks?: readonly { expr: string }[] | undefined }): ExpressionProblem[] {
  return (spec.healthChecks ?? []).flatMap((c, i) => {
    const compiled = compileExpression(c.expr);
    return compiled.ok ? [] : [{ path: ['spec', 'healthChecks', i, 'expr'], message: `invalid CEL expression: ${compiled.error}` }];
  });
}
