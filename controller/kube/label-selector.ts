// metav1.LabelSelector matching, as the apiserver does it for PodDisruptionBudgets (policy/v1:
// an empty selector matches every pod in the namespace; a missing one matches none).
export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export function selectorMatches(selector: LabelSelector | undefined, labels: Readonly<Record<string, string>>): boolean {
  if (!selector) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  return (selector.matchExpressions ?? []).every((r) => requirementMatches(r, labels));
}

function requirementMatches(r: LabelSelectorRequirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return has && values.includes(value ?? '');
    case 'NotIn':
      return !has || !values.includes(value ?? '');
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      // The apiserver rejects unknown operators; a selector we cannot read matches nothing.
      return false;
  }
}
