// The status document of a cluster: the plans asked for (or every plan, newest first), each with its
// PatchJobs and an auto-update template with its children. Pure: `nowMs` is the clock.
import { iso } from '../time.js';
import { autoUpdateEntry } from './auto-update-entry.js';
import { STATUS_KIND, STATUS_VERSION, type PlanEntry, type StatusDocument } from './document.js';
import type { StatusInput, StatusNodeInput, StatusPlanInput } from './input.js';
import { TEMPLATE_LABEL } from '../auto-update/child-plan.js';
import { nodeEntry, nodeOfJob, planOfJob } from './node-entry.js';
import { planEntry } from './plan-entry.js';

const newestFirst = (a: StatusPlanInput, b: StatusPlanInput): number =>
  b.created - a.created || a.name.localeCompare(b.name);
const byNode = (a: { node: string }, b: { node: string }): number =>
  a.node.localeCompare(b.node, 'en', { numeric: true });

/** The plans shown: those named (in the order given, once each, the missing ones left out), else all, newest first. */
function shownPlans(input: Pick<StatusInput, 'plans' | 'names'>): StatusPlanInput[] {
  if (input.names.length === 0) return [...input.plans].sort(newestFirst);
  const byName = new Map(input.plans.map((p) => [p.name, p]));
  return [...new Set(input.names)].flatMap((n) => byName.get(n) ?? []);
}

/** Names asked for that no PatchPlan has. */
export function missingPlans(input: Pick<StatusInput, 'plans' | 'names'>): string[] {
  const have = new Set(input.plans.map((p) => p.name));
  return [...new Set(input.names)].filter((n) => !have.has(n));
}

export function statusDocument(input: StatusInput, nowMs: number): StatusDocument {
  const nodes = new Map<string, StatusNodeInput>((input.nodes ?? []).map((n) => [n.name, n]));
  const entryOf = (p: StatusPlanInput): PlanEntry => {
    const jobs = input.jobs
      .filter((j) => planOfJob(j) === p.name)
      .map((j) => nodeEntry(j, nodes.get(nodeOfJob(j)), nowMs));
    return planEntry(p, jobs.sort(byNode), nowMs);
  };
  const plans = shownPlans(input).map((p) => {
    const entry = entryOf(p);
    if (!entry.template) return entry;
    const children = input.plans
      .filter((c) => c.name !== p.name && c.labels[TEMPLATE_LABEL] === p.name)
      .sort(newestFirst)
      .map(entryOf);
    return { ...entry, autoUpdate: autoUpdateEntry(p.status.autoUpdate, children) };
  });
  return {
    kind: STATUS_KIND,
    version: STATUS_VERSION,
    time: iso(nowMs),
    nodesReadable: input.nodes !== undefined,
    plans,
  };
}

/** Where a watch stands: every plan shown has finished (`completed` only when all Completed with no failed node), or not yet. */
export type WatchOutcome = 'running' | 'completed' | 'failed';

export function watchOutcome(doc: StatusDocument): WatchOutcome {
  if (doc.plans.length === 0 || doc.plans.some((p) => !p.finished)) return 'running';
  return doc.plans.every((p) => p.phase === 'Completed' && p.counts.failed === 0) ? 'completed' : 'failed';
}
