// The CEL side of health checks: the only importer of @bufbuild/cel. An expression is compiled once
// (syntax, and every free variable must be a top-level field of a Kubernetes object) and evaluated
// over each matched object, whose top-level fields are the variables, as tuppr users write them:
// `status.conditions.exists(c, c.type == "Ready" && c.status == "True")`, `has(status.robustness)`.
//
// Expressions come from plan authors, who are not trusted with the controller's event loop: each
// evaluation runs within a cost budget, as kube-apiserver bounds CRD validation rules. Every
// comprehension step and every character a string concatenation builds is counted; an evaluation
// that goes over stops at its next step and fails its object with the verdict `over its cost budget`.
// Regular expressions (`matches`) are RE2 (linear time) in the library already. Comprehensions nested
// deeper than MAX_COMPREHENSION_DEPTH are refused when the plan is loaded. What an evaluation reports
// is one of four fixed verdicts, never a value read from the object nor the library's error text: a
// plan author must not learn a field of an object by making its value the message.
import { CelScalar, celEnv, celFunc, isCelError, parse, plan, type CelInput } from '@bufbuild/cel';
import type { ObjectVerdict } from '../core/gates/health.js';

type Expr = ReturnType<typeof parse>['expr'];
type Obj = Record<string, unknown>;

/** The variables an expression may use: the usual top-level fields of an object, and `self` (the
 *  whole object, as in CRD validation rules). Absent ones are bound to an empty map, so `has(status.x)`
 *  is false on an object without status instead of an error. */
const OBJECT_VARIABLES = [
  'apiVersion',
  'kind',
  'metadata',
  'spec',
  'status',
  'data',
  'stringData',
  'binaryData',
  'type',
  'self',
] as const;
const STRING_VARIABLES = new Set(['apiVersion', 'kind', 'type']);
/** Identifiers CEL itself defines (type names used with type()). */
const CEL_IDENTIFIERS = new Set([
  'int',
  'uint',
  'double',
  'bool',
  'string',
  'bytes',
  'list',
  'map',
  'null_type',
  'type',
  'dyn',
]);

/** The cost one object's evaluation may use: comprehension steps plus string characters built / 100
 *  (a readiness check over a few conditions costs tens; 10 nested `.all()` over 10 elements, 10^10).
 *  About 10 ms of a core here. */
const COST_BUDGET = 20_000;
/** The cost one check may use over all its objects in one evaluation; the objects past it are not
 *  evaluated and fail `over its cost budget`. Verdicts are kept per object version, so an unchanged
 *  object is not evaluated again. */
const CHECK_COST_BUDGET = 100_000;
const STRING_CHARS_PER_COST = 100;
/** Deeper nesting multiplies the steps by each list's size: refused at load. */
const MAX_COMPREHENSION_DEPTH = 3;

/** The fixed verdicts an evaluation reports (status, Events, notifications, reports, logs). */
const Verdict = {
  True: 'true',
  False: 'false',
  NotABool: 'not a bool',
  EvaluationError: 'evaluation error',
  OverBudget: 'over its cost budget',
} as const;
type Verdict = (typeof Verdict)[keyof typeof Verdict];

/** The running evaluation's cost (evaluation is synchronous: one at a time). */
const meter = { used: 0 };
class OverBudget extends Error {}
const spend = (cost: number): void => {
  meter.used += cost;
  if (meter.used > COST_BUDGET) throw new OverBudget('over its cost budget');
};
const STEP_FUNCTION = 'kangalpatch_cost_step';

const env = celEnv({
  variables: Object.fromEntries(OBJECT_VARIABLES.map((v) => [v, CelScalar.DYN])),
  funcs: [
    // Called by every comprehension step (see withStepCost).
    celFunc(STEP_FUNCTION, [], CelScalar.BOOL, () => {
      spend(1);
      return true;
    }),
    // The one operator that grows a value without bound in few characters ([s].map(x, x + x), nested).
    celFunc('_+_', [CelScalar.STRING, CelScalar.STRING], CelScalar.STRING, (a, b) => {
      spend(Math.ceil((a.length + b.length) / STRING_CHARS_PER_COST));
      return a + b;
    }),
  ],
});

export type Evaluator = (object: Obj) => { passed: boolean; value: Verdict };
export type Compiled = { ok: true; evaluate: Evaluator } | { ok: false; error: string };

const cache = new Map<string, Compiled>();
const MAX_CACHE = 512;

/** Compiles (and caches) an expression; the error is the parser's (`1:10: found + but expecting ...`),
 *  names the unknown variable, or says the comprehensions nest too deep. */
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
  const unknown = [...freeIdentifiers(parsed.expr, new Set())].filter(
    (n) => !(OBJECT_VARIABLES as readonly string[]).includes(n) && !CEL_IDENTIFIERS.has(n),
  );
  if (unknown.length > 0) {
    return {
      ok: false,
      error: `undeclared reference to "${unknown[0] ?? ''}": the variables are the object's top-level fields (${OBJECT_VARIABLES.filter((v) => v !== 'self').join(', ')}) and self`,
    };
  }
  const depth = comprehensionDepth(parsed.expr);
  if (depth > MAX_COMPREHENSION_DEPTH) {
    return {
      ok: false,
      error: `comprehensions (all, exists, exists_one, map, filter) nest ${depth} deep, at most ${MAX_COMPREHENSION_DEPTH}: each level multiplies the evaluation's cost by a list's size`,
    };
  }
  withStepCost(parsed.expr, { next: maxId(parsed.expr) + 1n });
  let run: (bindings: Record<string, CelInput>) => unknown;
  try {
    run = plan(env, parsed);
  } catch {
    return { ok: false, error: 'the expression cannot be planned for evaluation' };
  }
  return { ok: true, evaluate: (object) => evaluateWithin(run, object) };
}

function evaluateWithin(
  run: (bindings: Record<string, CelInput>) => unknown,
  object: Obj,
): { passed: boolean; value: Verdict } {
  const bindings: Record<string, CelInput> = { self: object as CelInput };
  for (const v of OBJECT_VARIABLES) {
    if (v === 'self') continue;
    const value = object[v];
    bindings[v] = (value ?? (STRING_VARIABLES.has(v) ? '' : {})) as CelInput;
  }
  meter.used = 0;
  let result: unknown;
  try {
    result = run(bindings);
  } catch (err) {
    if (err instanceof OverBudget) return { passed: false, value: Verdict.OverBudget };
    return { passed: false, value: Verdict.EvaluationError };
  }
  // The library turns a throw inside a function into an error value, which CEL's logic may absorb
  // (`false && error`): the meter, not the result, says whether the budget held.
  if (meter.used > COST_BUDGET) return { passed: false, value: Verdict.OverBudget };
  if (isCelError(result)) return { passed: false, value: Verdict.EvaluationError };
  if (typeof result === 'boolean') return { passed: result, value: result ? Verdict.True : Verdict.False };
  return { passed: false, value: Verdict.NotABool };
}

/** How deep comprehensions nest (inside one another's range, step or result). */
function comprehensionDepth(e: Expr | undefined): number {
  if (!e) return 0;
  const k = e.exprKind;
  switch (k.case) {
    case 'selectExpr':
      return comprehensionDepth(k.value.operand);
    case 'callExpr':
      return Math.max(comprehensionDepth(k.value.target), ...k.value.args.map(comprehensionDepth));
    case 'listExpr':
      return Math.max(0, ...k.value.elements.map(comprehensionDepth));
    case 'structExpr':
      return Math.max(
        0,
        ...k.value.entries.map((en) =>
          Math.max(
            en.keyKind.case === 'mapKey' ? comprehensionDepth(en.keyKind.value) : 0,
            comprehensionDepth(en.value),
          ),
        ),
      );
    case 'comprehensionExpr': {
      const c = k.value;
      return Math.max(
        comprehensionDepth(c.iterRange),
        comprehensionDepth(c.accuInit),
        1 + Math.max(comprehensionDepth(c.loopCondition), comprehensionDepth(c.loopStep), comprehensionDepth(c.result)),
      );
    }
    default:
      return 0;
  }
}

function maxId(e: Expr | undefined): bigint {
  if (!e) return 0n;
  let max = e.id;
  const visit = (x: Expr | undefined): void => {
    if (x && x.id > max) max = x.id;
  };
  walk(e, visit);
  return max;
}

/** Every sub-expression, depth first. */
function walk(e: Expr | undefined, visit: (e: Expr) => void): void {
  if (!e) return;
  visit(e);
  const k = e.exprKind;
  switch (k.case) {
    case 'selectExpr':
      walk(k.value.operand, visit);
      break;
    case 'callExpr':
      walk(k.value.target, visit);
      for (const a of k.value.args) walk(a, visit);
      break;
    case 'listExpr':
      for (const el of k.value.elements) walk(el, visit);
      break;
    case 'structExpr':
      for (const en of k.value.entries) {
        if (en.keyKind.case === 'mapKey') walk(en.keyKind.value, visit);
        walk(en.value, visit);
      }
      break;
    case 'comprehensionExpr':
      for (const part of [k.value.iterRange, k.value.accuInit, k.value.loopCondition, k.value.loopStep, k.value.result])
        walk(part, visit);
      break;
    default:
      break;
  }
}

/** Rewrites every comprehension's loop condition `c` to `kangalpatch_cost_step() && c`, so each step
 *  is paid for before it runs; the new nodes get ids above the parser's. */
function withStepCost(e: Expr | undefined, ids: { next: bigint }): void {
  const comprehensions: Expr[] = [];
  walk(e, (x) => {
    if (x.exprKind.case === 'comprehensionExpr') comprehensions.push(x);
  });
  for (const x of comprehensions) {
    if (x.exprKind.case !== 'comprehensionExpr') continue;
    const c = x.exprKind.value;
    const guard = parse(`${STEP_FUNCTION}() && true`).expr;
    if (!guard || guard.exprKind.case !== 'callExpr') continue;
    const call = guard.exprKind.value;
    const step = call.args[0];
    if (!step || !c.loopCondition) continue;
    guard.id = ids.next++;
    step.id = ids.next++;
    call.args[1] = c.loopCondition;
    c.loopCondition = guard;
  }
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
      freeInStruct(k.value, bound, out);
      break;
    case 'comprehensionExpr':
      freeInComprehension(k.value, bound, out);
      break;
    default:
      break;
  }
  return out;
}

/** The contents of one case of expression, e.g. ExprKindValue<'structExpr'>. */
type ExprKindValue<C extends string> = Extract<NonNullable<Expr>['exprKind'], { case: C }>['value'];

/** freeIdentifiers of a struct or map literal: its map keys and its values. */
function freeInStruct(struct: ExprKindValue<'structExpr'>, bound: ReadonlySet<string>, out: Set<string>): void {
  for (const en of struct.entries) {
    if (en.keyKind.case === 'mapKey') freeIdentifiers(en.keyKind.value, bound, out);
    freeIdentifiers(en.value, bound, out);
  }
}

/** freeIdentifiers of a comprehension: its loop variables and accumulator are bound in its condition, step and result. */
function freeInComprehension(
  c: ExprKindValue<'comprehensionExpr'>,
  bound: ReadonlySet<string>,
  out: Set<string>,
): void {
  freeIdentifiers(c.iterRange, bound, out);
  freeIdentifiers(c.accuInit, bound, out);
  const inner = new Set([...bound, c.iterVar, c.iterVar2, c.accuVar].filter((v) => v !== ''));
  freeIdentifiers(c.loopCondition, inner, out);
  freeIdentifiers(c.loopStep, inner, out);
  freeIdentifiers(c.result, inner, out);
}

/** `namespace/name` or `name`. */
function objectRef(object: Obj): string {
  const md = (object.metadata ?? {}) as { name?: unknown; namespace?: unknown };
  const name = typeof md.name === 'string' ? md.name : '?';
  return typeof md.namespace === 'string' && md.namespace !== '' ? `${md.namespace}/${name}` : name;
}

/** Verdicts per object (an informer replaces an object on every change), then per expression. */
type Kept = { passed: boolean; value: Verdict; cost: number };
const kept = new WeakMap<Obj, Map<string, Kept>>();
const MAX_KEPT_PER_OBJECT = 16;

/** Each object's verdict under a compiled expression, within the check's budget. */
export function verdicts(expr: string, evaluate: Evaluator, objects: readonly Obj[]): ObjectVerdict[] {
  let spent = 0;
  return objects.map((o) => {
    let byExpr = kept.get(o);
    let v = byExpr?.get(expr);
    if (v === undefined) {
      if (spent >= CHECK_COST_BUDGET) return { ref: objectRef(o), passed: false, value: Verdict.OverBudget };
      v = { ...evaluate(o), cost: meter.used };
      if (!byExpr) kept.set(o, (byExpr = new Map<string, Kept>()));
      if (byExpr.size >= MAX_KEPT_PER_OBJECT) byExpr.clear();
      byExpr.set(expr, v);
      spent += v.cost;
    }
    return { ref: objectRef(o), passed: v.passed, value: v.value };
  });
}

export interface ExpressionProblem {
  /** e.g. ['spec', 'healthChecks', 2, 'expr'] */
  path: (string | number)[];
  message: string;
}

/** Every health check expression that does not compile, for the plan loader and the controller. */
export function expressionProblems(spec: {
  healthChecks?: readonly { expr: string }[] | undefined;
}): ExpressionProblem[] {
  return (spec.healthChecks ?? []).flatMap((c, i) => {
    const compiled = compileExpression(c.expr);
    return compiled.ok
      ? []
      : [{ path: ['spec', 'healthChecks', i, 'expr'], message: `invalid CEL expression: ${compiled.error}` }];
  });
}
