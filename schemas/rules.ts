// Cross-field rules of a PatchPlan spec, each defined once for zod and for the CRD's CEL (see
// schemas/cross-field.ts). The zod side sees the object as written (it runs even when other fields are
// invalid, so it inspects values defensively); the CEL side sees it after the apiserver's defaulting.
import type { z } from 'zod';
import { BUILT_IN_GROUPS } from './api.js';
import { asObj, type CrossFieldRule, type Obj } from './cross-field.js';
import { suggest } from './suggest.js';
import { CEL_GHCR_UNPUBLISHED, ghcrPublishesInstaller } from './ghcr-installer.js';

type Ctx = z.core.$RefinementCtx<unknown>;

const CEL_BUILT_IN = `[${BUILT_IN_GROUPS.map((g) => `'${g}'`).join(', ')}]`;
const quoted = (names: readonly string[]) => names.map((n) => `"${n}"`).join(', ');

// ---- spec.target ----

const autoUpdateOn = (t: Obj) => asObj(t.autoUpdate)?.enabled === true;
const isFactory = (t: Obj) => t.source === 'factory';
const CEL_AUTO = 'has(self.autoUpdate) && self.autoUpdate.enabled';
const CEL_FACTORY = "has(self.source) && self.source == 'factory'";
const OMIT_WITH_AUTO = 'must be omitted when target.autoUpdate is enabled (each release gets its own child plan)';

const omittedWithAutoUpdate = (field: 'talosVersion' | 'kubernetesVersion'): CrossFieldRule => ({
  id: `target.${field}.omittedWithAutoUpdate`,
  path: [field],
  holds: (t) => !autoUpdateOn(t) || t[field] === undefined,
  cel: `!(${CEL_AUTO}) || !has(self.${field})`,
  message: OMIT_WITH_AUTO,
});

const factoryOnly = (field: 'installer' | 'schematicID'): CrossFieldRule => ({
  id: `target.${field}.factoryOnly`,
  path: [field],
  holds: (t) => isFactory(t) || t[field] === undefined,
  cel: `(${CEL_FACTORY}) || !has(self.${field})`,
  message: 'is only used with target.source: factory',
});

export const TARGET_RULES: readonly CrossFieldRule[] = [
  {
    id: 'target.versionOrAutoUpdate',
    path: [],
    holds: (t) => autoUpdateOn(t) || t.talosVersion !== undefined || t.kubernetesVersion !== undefined,
    cel: `has(self.talosVersion) || has(self.kubernetesVersion) || (${CEL_AUTO})`,
    message:
      'at least one of target.talosVersion, target.kubernetesVersion or an enabled target.autoUpdate must be set',
  },
  omittedWithAutoUpdate('talosVersion'),
  omittedWithAutoUpdate('kubernetesVersion'),
  {
    id: 'target.allowTalosDowngrade.notWithAutoUpdate',
    path: ['allowTalosDowngrade'],
    holds: (t) => !autoUpdateOn(t) || t.allowTalosDowngrade !== true,
    cel: `!(${CEL_AUTO}) || !has(self.allowTalosDowngrade) || !self.allowTalosDowngrade`,
    message: 'must not be set when target.autoUpdate is enabled (auto-update never downgrades)',
  },
  {
    id: 'target.path.stepwiseNeverDown',
    path: ['allowTalosDowngrade'],
    holds: (t) => t.path !== 'stepwise' || t.allowTalosDowngrade !== true,
    cel: `!has(self.path) || self.path != 'stepwise' || !has(self.allowTalosDowngrade) || !self.allowTalosDowngrade`,
    message: 'must not be set with target.path: stepwise (a path only goes up)',
  },
  factoryOnly('installer'),
  factoryOnly('schematicID'),
  {
    id: 'target.source.factoryFrom114',
    path: ['source'],
    holds: (t) => isFactory(t) || ghcrPublishesInstaller(t.talosVersion),
    cel: `(${CEL_FACTORY}) || !has(self.talosVersion) || !${CEL_GHCR_UNPUBLISHED}`,
    message:
      'must be factory for a Talos target of v1.14 or later: ghcr.io/siderolabs/installer is not published from 1.14; use target.source: factory with target.installer (e.g. metal), and target.schematicID only to change extensions',
  },
  {
    id: 'target.secureBoot.factoryOnly',
    path: ['secureBoot'],
    holds: (t) => isFactory(t) || t.secureBoot !== true,
    cel: `(${CEL_FACTORY}) || !has(self.secureBoot) || !self.secureBoot`,
    message: 'is only available with target.source: factory',
  },
];

// ---- spec.groups ----

const groupEntries = (g: Obj) => Object.entries(g).filter(([, spec]) => asObj(spec) !== undefined) as [string, Obj][];
const customWithoutSelector = (g: Obj) =>
  groupEntries(g)
    .filter(([name, spec]) => !BUILT_IN_GROUPS.includes(name) && spec.selector === undefined)
    .map(([name]) => name);
const CEL_CUSTOM_WITHOUT_SELECTOR = `self.filter(k, !(k in ${CEL_BUILT_IN}) && !has(self[k].selector))`;
const SELECTOR_WHY = `only the built-in groups ${BUILT_IN_GROUPS.join(' and ')} select their nodes without one`;

export const GROUP_RULES: readonly CrossFieldRule[] = [
  ...BUILT_IN_GROUPS.map((name): CrossFieldRule => ({
    id: `groups.${name}.noSelector`,
    path: [name, 'selector'],
    holds: (g) => asObj(g[name])?.selector === undefined,
    cel: `!has(self.${name}) || !has(self.${name}.selector)`,
    message: `is not allowed on the built-in group "${name}"; declare a custom group to filter nodes`,
  })),
  {
    // The apiserver iterates a map in no fixed order and its cost budget forbids joining map keys, so
    // the message names the group only when it is the only one.
    id: 'groups.custom.selectorRequired',
    path: [],
    holds: (g) => customWithoutSelector(g).length === 0,
    cel: `self.all(k, k in ${CEL_BUILT_IN} || has(self[k].selector))`,
    message: {
      text: (g) => {
        const missing = customWithoutSelector(g);
        return missing.length === 1
          ? `custom group "${missing[0] ?? ''}" needs a selector (${SELECTOR_WHY})`
          : `custom groups need a selector (${SELECTOR_WHY})`;
      },
      cel: `size(${CEL_CUSTOM_WITHOUT_SELECTOR}) == 1 ? 'custom group "' + ${CEL_CUSTOM_WITHOUT_SELECTOR}[0] + '" needs a selector (${SELECTOR_WHY})' : 'custom groups need a selector (${SELECTOR_WHY})'`,
    },
    detail: (g) => {
      const missing = customWithoutSelector(g);
      return missing.length > 1 ? `: missing on ${quoted(missing)}` : undefined;
    },
  },
];

// ---- spec (rules spanning several fields of the spec) ----

const DEFAULT_ORDER: readonly string[] = ['controlPlane', 'workers'];
const orderOf = (spec: Obj): unknown[] => {
  const order = asObj(spec.strategy)?.order;
  if (order === undefined) return [...DEFAULT_ORDER];
  return Array.isArray(order) ? order : [];
};
const unknownGroups = (spec: Obj): string[] => {
  const known = [...BUILT_IN_GROUPS, ...Object.keys(asObj(spec.groups) ?? {})];
  return [...new Set(orderOf(spec).filter((n): n is string => typeof n === 'string' && !known.includes(n)))];
};
const CEL_ORDER = 'self.strategy.order';
const CEL_UNKNOWN = `${CEL_ORDER}.filter(n, !(n in ${CEL_BUILT_IN}) && !(has(self.groups) && n in self.groups))`;

const ORDER_WHERE = 'under spec.groups or use a built-in group (controlPlane, workers)';

export const SPEC_RULES: readonly CrossFieldRule[] = [
  {
    // Names the first unknown group: the cost budget forbids joining the names in CEL.
    id: 'strategy.order.knownGroups',
    path: ['strategy', 'order'],
    holds: (spec) => unknownGroups(spec).length === 0,
    cel: `!has(self.strategy) || !has(${CEL_ORDER}) || ${CEL_ORDER}.all(n, n in ${CEL_BUILT_IN} || (has(self.groups) && n in self.groups))`,
    message: {
      text: (spec) => {
        const unknown = unknownGroups(spec);
        return unknown.length === 1
          ? `unknown group "${unknown[0] ?? ''}": declare it ${ORDER_WHERE}`
          : `unknown groups, the first "${unknown[0] ?? ''}": declare them ${ORDER_WHERE}`;
      },
      cel:
        `(size(${CEL_UNKNOWN}) == 1 ? 'unknown group "' : 'unknown groups, the first "') + ${CEL_UNKNOWN}[0] + ` +
        `(size(${CEL_UNKNOWN}) == 1 ? '": declare it ' : '": declare them ') + '${ORDER_WHERE}'`,
    },
    detail: (spec) => {
      const unknown = unknownGroups(spec);
      if (unknown.length > 1) return ` (all unknown: ${quoted(unknown)})`;
      const hint = suggest(unknown[0] ?? '', [...BUILT_IN_GROUPS, ...Object.keys(asObj(spec.groups) ?? {})]);
      return hint ? ` (did you mean "${hint}"?)` : undefined;
    },
  },
  {
    id: 'strategy.order.controlPlaneFirst',
    path: ['strategy', 'order'],
    holds: (spec) => {
      if (asObj(spec.target)?.kubernetesVersion === undefined) return true;
      const order = orderOf(spec);
      const cp = order.indexOf('controlPlane');
      const workers = order.indexOf('workers');
      return cp < 0 || workers < 0 || cp < workers;
    },
    cel:
      `!has(self.target.kubernetesVersion) || !has(self.strategy) || !has(${CEL_ORDER}) || !('controlPlane' in ${CEL_ORDER}) || ` +
      `!('workers' in ${CEL_ORDER}) || ${CEL_ORDER}.indexOf('controlPlane') < ${CEL_ORDER}.indexOf('workers')`,
    message: 'lists workers before controlPlane: with target.kubernetesVersion the control plane is upgraded first',
  },
];

// ---- maintenance.windows[] ----

export const WINDOW_RULES: readonly CrossFieldRule[] = [
  {
    id: 'maintenance.window.nonEmpty',
    path: ['endTime'],
    holds: (w) => typeof w.startTime !== 'string' || w.startTime !== w.endTime,
    cel: 'self.startTime != self.endTime',
    message: 'must differ from startTime (a window of zero length never opens)',
  },
];

// ---- label selector requirements (nodeSelector, groups.<name>.selector) ----

const needsValues = (r: Obj) => r.operator === 'In' || r.operator === 'NotIn';
const valueCount = (r: Obj) => (Array.isArray(r.values) ? r.values.length : 0);

export const SELECTOR_REQUIREMENT_RULES: readonly CrossFieldRule[] = [
  {
    id: 'selector.values.required',
    path: ['values'],
    holds: (r) => !needsValues(r) || valueCount(r) > 0,
    cel: "!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",
    message: {
      text: (r) => `must list at least one value for operator ${String(r.operator)}`,
      cel: "'must list at least one value for operator ' + self.operator",
    },
  },
  {
    id: 'selector.values.forbidden',
    path: ['values'],
    holds: (r) => !(r.operator === 'Exists' || r.operator === 'DoesNotExist') || valueCount(r) === 0,
    cel: "!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",
    message: {
      text: (r) => `must be empty for operator ${String(r.operator)}`,
      cel: "'must be empty for operator ' + self.operator",
    },
  },
];

// ---- not expressible as a CRD rule ----

/** The Talos credentials Secret must be in the operator namespace: a plan from Git must not be able
 *  to make the controller read Secrets of other namespaces. The operator namespace is a run-time flag
 *  (`--namespace`) the generated CRD cannot know, so this stays a zod rule of `validate` and the
 *  GitOps loader, and for kubectl-applied plans a run-time refusal (`TalosSecretOutsideOperatorNamespace`). */
export function secretNamespaceRule(operatorNamespace: string) {
  return (value: unknown, ctx: Ctx): void => {
    const ns = asObj(asObj(asObj(asObj(value)?.spec)?.talosConfig)?.secretRef)?.namespace;
    if (typeof ns === 'string' && ns !== operatorNamespace) {
      ctx.addIssue({
        code: 'custom',
        path: ['spec', 'talosConfig', 'secretRef', 'namespace'],
        message: `must be the operator namespace "${operatorNamespace}" (or omitted): the Talos credentials Secret is only read from there`,
      });
    }
  };
}

/** strategy.order names each group once. Not a CEL rule: the CRD declares the list a set
 *  (`x-kubernetes-list-type: set`), so the apiserver refuses a duplicate itself ("Duplicate value"). */
export function uniqueOrderRule(order: unknown, ctx: Ctx): void {
  if (!Array.isArray(order)) return;
  const seen = new Set<unknown>();
  order.forEach((name: unknown, i) => {
    if (typeof name === 'string' && seen.has(name)) {
      ctx.addIssue({ code: 'custom', path: [i], message: `group "${name}" is listed more than once` });
    }
    seen.add(name);
  });
}

// ---- spec.drain ----

const nonEmpty = (v: unknown): boolean =>
  Array.isArray(v) ? v.length > 0 : asObj(v) !== undefined && Object.keys(asObj(v) ?? {}).length > 0;

export const DRAIN_RULES: readonly CrossFieldRule[] = [
  {
    // An empty selector matches every pod: the drain would evict nothing and the node reboot under its workloads.
    id: 'drain.skipPods.selectsSomething',
    path: ['skipPods'],
    holds: (d) =>
      d.skipPods === undefined ||
      nonEmpty(asObj(d.skipPods)?.matchLabels) ||
      nonEmpty(asObj(d.skipPods)?.matchExpressions),
    cel: '!has(self.skipPods) || (has(self.skipPods.matchLabels) && size(self.skipPods.matchLabels) > 0) || (has(self.skipPods.matchExpressions) && size(self.skipPods.matchExpressions) > 0)',
    message:
      'must name at least one label (matchLabels or matchExpressions): an empty selector matches every pod, and the drain would evict none',
  },
];
