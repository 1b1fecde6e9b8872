// Health gates: whether the checks of spec.healthChecks let the rollout schedule a new node now.
// Pure: the objects were read and the expression evaluated by the gates adapter; this decides from
// the verdicts, the check, when the wait began and `now`.
import type { HealthCheck, HealthCheckWait, HealthCheckWhen } from '../../../schemas/health.js';
import { durationMs, iso } from '../time.js';

/** One matched object and what the check's expression made of it. */
export interface ObjectVerdict {
  /** `namespace/name`, or `name` for a cluster-scoped object. */
  ref: string;
  passed: boolean;
  /** The expression's value (`false`, `"degraded"`, or the evaluation error), for messages. */
  value: string;
}

/** What the adapter knows about one check's objects. */
export type CheckFacts =
  /** The objects could not be read (watch not synced yet, unknown kind, forbidden): the gate stays closed. */
  { state: 'unavailable'; message: string } | { state: 'observed'; objects: readonly ObjectVerdict[] };

export type GateState =
  | { state: 'open' }
  | { state: 'closed'; reason: 'WaitingForHealthCheck'; message: string; startTime: number; deadline: number }
  | { state: 'failed'; reason: 'HealthCheckTimeout' | 'HealthCheckNoMatch'; message: string };

const MAX_NAMED = 3;

function describeObjects(check: HealthCheck): string {
  const where = check.namespace === undefined ? '' : ` in namespace ${check.namespace}`;
  const which =
    check.objectName !== undefined
      ? ` ${check.objectName}`
      : check.labelSelector !== undefined
        ? ' matching labelSelector'
        : '';
  return `${check.kind}${which} (${check.apiVersion})${where}`;
}

/** The state of one check's gate. `since`: when the rollout began waiting for this check (undefined: not waiting yet). */
export function gateState(check: HealthCheck, facts: CheckFacts, since: number | undefined, now: number): GateState {
  const startTime = since ?? now;
  const deadline = startTime + durationMs(check.timeout);
  const label = `health check ${check.name}`;
  let why: string;
  if (facts.state === 'unavailable') {
    why = `cannot read ${describeObjects(check)}: ${facts.message}`;
  } else if (facts.objects.length === 0) {
    why = `no object matched: ${describeObjects(check)}`;
    if (check.onNoMatch === 'fail')
      return { state: 'failed', reason: 'HealthCheckNoMatch', message: `${label}: ${why} (onNoMatch: fail)` };
  } else {
    const failing = facts.objects.filter((o) => !o.passed);
    if (failing.length === 0) return { state: 'open' };
    const named = failing
      .slice(0, MAX_NAMED)
      .map((o) => `${o.ref}: ${o.value}`)
      .join('; ');
    const more = failing.length > MAX_NAMED ? `; and ${failing.length - MAX_NAMED} more` : '';
    why = `${failing.length} of ${facts.objects.length} ${check.kind} object(s) fail \`${check.expr}\`: ${named}${more}`;
  }
  if (now >= deadline)
    return {
      state: 'failed',
      reason: 'HealthCheckTimeout',
      message: `${label} did not hold within its timeout ${check.timeout}: ${why}`,
    };
  return {
    state: 'closed',
    reason: 'WaitingForHealthCheck',
    message: `waiting for ${label} (until ${iso(deadline)}): ${why}`,
    startTime,
    deadline,
  };
}

export interface GateInput {
  checks: readonly HealthCheck[];
  /** Aligned with `checks`; a missing entry is unavailable. */
  facts: readonly (CheckFacts | undefined)[];
  /** The wait recorded in status, if any. */
  wait: HealthCheckWait | undefined;
  /** No node of the plan has been scheduled yet. */
  firstNode: boolean;
  /** At least one node of the plan has finished. */
  nodeFinished: boolean;
  now: number;
}

export type GateDecision =
  | { state: 'open' }
  | {
      state: 'closed';
      check: HealthCheck;
      reason: 'WaitingForHealthCheck';
      message: string;
      wait: HealthCheckWait;
      deadline: number;
    }
  | { state: 'failed'; check: HealthCheck; reason: 'HealthCheckTimeout' | 'HealthCheckNoMatch'; message: string };

/** The checks that gate a new node now: beforeRollout before the first, beforeEachNode before each,
 *  afterEachNode once a node has finished (the next one waits until it holds). */
function applies(when: HealthCheckWhen, firstNode: boolean, nodeFinished: boolean): boolean {
  if (when === 'beforeRollout') return firstNode;
  if (when === 'afterEachNode') return nodeFinished;
  return true;
}

/** The first check (in spec order) that holds the rollout, or open. */
export function decideGates(input: GateInput): GateDecision {
  for (const [i, check] of input.checks.entries()) {
    if (!applies(check.when, input.firstNode, input.nodeFinished)) continue;
    const facts = input.facts[i] ?? { state: 'unavailable', message: 'not observed yet' };
    const waiting = input.wait?.name === check.name ? Date.parse(input.wait.startTime) : undefined;
    const g = gateState(check, facts, Number.isNaN(waiting) ? undefined : waiting, input.now);
    if (g.state === 'open') continue;
    if (g.state === 'failed') return { ...g, check };
    return {
      ...g,
      check,
      wait: { name: check.name, when: check.when, startTime: iso(g.startTime), deadline: iso(g.deadline) },
    };
  }
  return { state: 'open' };
}
