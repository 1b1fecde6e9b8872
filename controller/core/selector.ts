// metav1.LabelSelector matching, the one implementation for node selection (plans, groups) and, through
// controller/kube/label-selector.ts, for PodDisruptionBudgets.
import type { z } from 'zod';
import type { labelSelector } from '../../schemas/primitives.js';

export type LabelSelector = z.output<typeof labelSelector>;
export type LabelSelectorRequirement = NonNullable<LabelSelector['matchExpressions']>[number];
export type Labels = Readonly<Record<string, string>>;

/**
 * Whether `labels` satisfy the selector: every matchLabels pair and every matchExpressions
 * requirement (AND). An undefined or empty selector matches everything, as a plan's omitted
 * nodeSelector means "all nodes". (PodDisruptionBudgets differ for a missing selector: see
 * kube/label-selector.ts.)
 */
export function matchesSelector(selector: LabelSelector | undefined, labels: Labels): boolean {
  if (!selector) return true;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (!Object.hasOwn(labels, key) || labels[key] !== value) return false;
  }
  return (selector.matchExpressions ?? []).every((r) => requirementMatches(r, labels));
}

function requirementMatches(r: LabelSelectorRequirement, labels: Labels): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = has ? labels[r.key] : undefined;
  const listed = value !== undefined && (r.values ?? []).includes(value);
  switch (r.operator) {
    case 'In':
      return listed;
    case 'NotIn':
      return !listed;
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      // Unreachable for validated input; an operator we cannot read matches nothing.
      return false;
  }
}
