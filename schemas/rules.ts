// Cross-field rules of a PatchPlan spec. They run even when other fields are invalid (so a user sees
// every problem in one pass), hence they inspect the raw value defensively instead of trusting types.
import type { z } from 'zod';
import { suggest } from './suggest.js';
import { BUILT_IN_GROUPS } from './api.js';

type Ctx = z.core.$RefinementCtx<unknown>;
type Obj = Record<string, unknown>;

const asObj = (v: unknown): Obj | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
const issue = (ctx: Ctx, path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });

export function targetRules(value: unknown, ctx: Ctx): void {
  const t = asObj(value);
  if (!t) return;
  const autoUpdate = asObj(t.autoUpdate)?.enabled === true;
  if (!autoUpdate && t.talosVersion === undefined && t.kubernetesVersion === undefined) {
    issue(ctx, [], 'at least one of target.talosVersion, target.kubernetesVersion or an enabled target.autoUpdate must be set');
  }
  if (autoUpdate) autoUpdateRules(t, ctx);
  sourceRules(t, ctx);
}

function autoUpdateRules(t: Obj, ctx: Ctx): void {
  for (const field of ['talosVersion', 'kubernetesVersion']) {
    if (t[field] !== undefined) {
      issue(ctx, [field], 'must be omitted when target.autoUpdate is enabled (each release gets its own child plan)');
    }
  }
  if (t.allowTalosDowngrade === true) {
    issue(ctx, ['allowTalosDowngrade'], 'must not be set when target.autoUpdate is enabled (auto-update never downgrades)');
  }
}

function sourceRules(t: Obj, ctx: Ctx): void {
  if (t.source === 'factory') {
    if (t.installer === undefined) issue(ctx, ['installer'], 'is required when target.source is factory');
    return;
  }
  for (const field of ['installer', 'schematicID']) {
    if (t[field] !== undefined) issue(ctx, [field], 'is only used with target.source: factory');
  }
  if (t.secureBoot === true) issue(ctx, ['secureBoot'], 'is only available with target.source: factory');
}

export function groupRules(value: unknown, ctx: Ctx): void {
  const groups = asObj(value);
  if (!groups) return;
  for (const [name, spec] of Object.entries(groups)) {
    const hasSelector = asObj(spec)?.selector !== undefined;
    if (BUILT_IN_GROUPS.includes(name) && hasSelector) {
      issue(ctx, [name, 'selector'], `is not allowed on the built-in group "${name}"; declare a custom group to filter nodes`);
    }
    if (!BUILT_IN_GROUPS.includes(name) && !hasSelector && asObj(spec)) {
      issue(ctx, [name, 'selector'], `is required for the custom group "${name}"`);
    }
  }
}

/** strategy.order may only name declared or built-in groups, each once. Runs on the whole spec. */
export function orderRules(value: unknown, ctx: Ctx): void {
  const spec = asObj(value);
  const order = asObj(spec?.strategy)?.order;
  if (!spec || !Array.isArray(order)) return;
  const known = [...BUILT_IN_GROUPS, ...Object.keys(asObj(spec.groups) ?? {})];
  const seen = new Set<unknown>();
  order.forEach((name: unknown, i) => {
    const path = ['strategy', 'order', i];
    if (typeof name !== 'string') return;
    if (seen.has(name)) issue(ctx, path, `group "${name}" is listed more than once`);
    seen.add(name);
    if (!known.includes(name)) {
      const hint = suggest(name, known);
      issue(
        ctx,
        path,
        `unknown group "${name}": declare it under spec.groups or use a built-in group (controlPlane, workers)` +
          (hint ? ` (did you mean "${hint}"?)` : ''),
      );
    }
  });
}

export function windowRules(value: unknown, ctx: Ctx): void {
  const w = asObj(value);
  if (w && typeof w.startTime === 'string' && w.startTime === w.endTime) {
    issue(ctx, ['endTime'], 'must differ from startTime (a window of zero length never opens)');
  }
}

/** The Talos credentials Secret must be in the operator namespace: a plan from Git must not be able
 *  to make the controller read Secrets of other namespaces. */
export function secretNamespaceRule(operatorNamespace: string) {
  return (value: unknown, ctx: Ctx): void => {
    const ns = asObj(asObj(asObj(asObj(value)?.spec)?.talosConfig)?.secretRef)?.namespace;
    if (typeof ns === 'string' && ns !== operatorNamespace) {
      issue(
        ctx,
        ['spec', 'talosConfig', 'secretRef', 'namespace'],
        `must be the operator namespace "${operatorNamespace}" (or omitted): the Talos credentials Secret is only read from there`,
      );
    }
  };
}
