// The alert gate: whether firing alerts in Alertmanager let the rollout schedule a new node now.
// Pure: the alertmanager adapter asked Alertmanager (each of spec.alertGate's matcher lists, and the
// ignore lists); this decides from its answer, its age, when the wait began and `now`.
// Alertmanager has no watch API: while the gate is closed, or a node is about to be scheduled and
// the last answer is older than one interval, the decision asks for a fresh answer (an action of the
// plan's pass); with no plan gated, nobody asks. The gate never opens on an answer older than that.
import type { AlertGate, AlertWait } from '../../../schemas/alerts.js';
import { durationMs, iso } from '../time.js';

export interface FiringAlert {
  /** Alertmanager's fingerprint: the same alert matched by two lists is one alert. */
  fingerprint: string;
  labels: Readonly<Record<string, string>>;
}

/** What the adapter last learnt from Alertmanager for one plan's gate. */
export type AlertFacts = {
  /** When Alertmanager answered, or the attempt failed (epoch ms). */
  observedAt: number;
  /** How old an answer may be before the gate asks again. */
  intervalMs: number;
} & (
  | { state: 'unavailable'; message: string }
  | {
      state: 'observed';
      /** Active alerts matching any of the gate's matcher lists (neither silenced nor inhibited). */
      matched: readonly FiringAlert[];
      /** Fingerprints of the active alerts matching an ignore list. */
      ignored: readonly string[];
    }
);

export type AlertGateDecision =
  | { state: 'open' }
  /** `ask`: the answer is too old, ask Alertmanager now; else look again at `recheckAt`. */
  | {
      state: 'closed';
      reason: 'WaitingForAlerts';
      message: string;
      wait: AlertWait;
      deadline: number;
      ask: boolean;
      recheckAt: number;
    }
  | { state: 'failed'; reason: 'AlertGateTimeout'; message: string };

const MAX_NAMED = 3;

/** `CephHealthError{namespace="rook-ceph", severity="critical"}`: how people write an alert. */
function describeAlert(a: FiringAlert): string {
  const { alertname, ...rest } = a.labels;
  const labels = Object.entries(rest)
    .sort(([x], [y]) => x.localeCompare(y))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
  return `${alertname ?? '(no alertname)'}{${labels}}`;
}

/** The alerts that hold the rollout: matched and not ignored, each once, in a stable order. */
function blockingAlerts(facts: Extract<AlertFacts, { state: 'observed' }>): FiringAlert[] {
  const ignored = new Set(facts.ignored);
  const seen = new Set<string>();
  return facts.matched
    .filter((a) => !ignored.has(a.fingerprint) && !seen.has(a.fingerprint) && (seen.add(a.fingerprint), true))
    .sort((x, y) => describeAlert(x).localeCompare(describeAlert(y)));
}

/** Why the last answer holds the gate, with the alerts that hold it; why undefined: it lets it open. */
function verdict(facts: AlertFacts | undefined): { why: string | undefined; alerts: FiringAlert[] } {
  if (facts === undefined) return { why: 'asking Alertmanager before the next node is scheduled', alerts: [] };
  if (facts.state === 'unavailable') return { why: `cannot ask Alertmanager: ${facts.message}`, alerts: [] };
  const alerts = blockingAlerts(facts);
  if (alerts.length === 0) return { why: undefined, alerts };
  const named = alerts.slice(0, MAX_NAMED).map(describeAlert).join('; ');
  const more = alerts.length > MAX_NAMED ? `; and ${alerts.length - MAX_NAMED} more` : '';
  return { why: `${alerts.length} firing alert(s) match spec.alertGate: ${named}${more}`, alerts };
}

/** The gate's state. `wait`: the wait recorded in status, if the rollout is already waiting. */
export function decideAlertGate(
  gate: AlertGate,
  facts: AlertFacts | undefined,
  wait: AlertWait | undefined,
  now: number,
): AlertGateDecision {
  const stale = facts === undefined || now - facts.observedAt >= facts.intervalMs;
  const v = verdict(facts);
  if (v.why === undefined && !stale) return { state: 'open' };
  // An old "no alerts" is no reason to open: the words say we are asking again.
  const why = v.why ?? 'asking Alertmanager again before the next node is scheduled';
  const since = wait === undefined ? Number.NaN : Date.parse(wait.startTime);
  const startTime = Number.isNaN(since) ? now : since;
  const deadline = startTime + durationMs(gate.timeout);
  if (now >= deadline && v.why !== undefined)
    return {
      state: 'failed',
      reason: 'AlertGateTimeout',
      message: `the alert gate did not open within its timeout ${gate.timeout}: ${v.why}`,
    };
  const every =
    facts === undefined
      ? ''
      : `; Alertmanager is asked every ${Math.round(facts.intervalMs / 1000)}s while the gate is closed`;
  const alerts = v.alerts.slice(0, MAX_NAMED).map(describeAlert);
  return {
    state: 'closed',
    reason: 'WaitingForAlerts',
    message: `waiting for alerts (until ${iso(deadline)}): ${why}${every}`,
    wait: { startTime: iso(startTime), deadline: iso(deadline), ...(alerts.length > 0 ? { alerts } : {}) },
    deadline,
    ask: stale,
    recheckAt: facts === undefined ? now : Math.min(deadline, facts.observedAt + facts.intervalMs),
  };
}
