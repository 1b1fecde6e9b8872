// metav1.LabelSelector matching as the apiserver does it for PodDisruptionBudgets (policy/v1: an empty
// selector matches every pod in the namespace; a missing one matches none). The matching itself is
// core/selector.ts; this adapter adds the PDB rule for a missing selector and reads the client's
// looser types (operator is any string there).
import { SelectorOperator } from '../../schemas/primitives.js';
import { matchesSelector, type LabelSelectorRequirement as CoreRequirement } from '../core/selector.js';

interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

const isOperator = (op: string): op is SelectorOperator => Object.values<string>(SelectorOperator).includes(op);

export function selectorMatches(
  selector: LabelSelector | null | undefined,
  labels: Readonly<Record<string, string>>,
): boolean {
  if (!selector) return false;
  const expressions: CoreRequirement[] = [];
  for (const r of selector.matchExpressions ?? []) {
    // The apiserver rejects unknown operators; a selector we cannot read matches nothing.
    if (!isOperator(r.operator)) return false;
    expressions.push({ key: r.key, operator: r.operator, ...(r.values ? { values: r.values } : {}) });
  }
  return matchesSelector(
    { ...(selector.matchLabels ? { matchLabels: selector.matchLabels } : {}), matchExpressions: expressions },
    labels,
  );
}
