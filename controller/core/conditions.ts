// metav1.Condition lists: set one condition, keeping its lastTransitionTime while its status holds.
import type { Condition } from '../../schemas/primitives.js';

export function setCondition(
  conditions: readonly Condition[] | undefined,
  c: Omit<Condition, 'lastTransitionTime'>,
  now: number,
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((x) => x.type === c.type);
  const old = i >= 0 ? list[i] : undefined;
  const lastTransitionTime = old && old.status === c.status ? old.lastTransitionTime : new Date(now).toISOString();
  const next: Condition = { ...c, lastTransitionTime };
  if (i >= 0) list[i] = next;
  else list.push(next);
  return list;
}

export function conditionStatus(conditions: readonly Condition[] | undefined, type: string): string | undefined {
  return conditions?.find((c) => c.type === type)?.status;
}
