// The alert gate's answers from Alertmanager, per plan: asked when a plan's pass decides it needs a
// fresh one (askAlertmanager), kept for its next passes. Memory only on purpose: an answer is worth
// one interval, and a restarted controller simply asks again.
import type { AlertGate } from '../../schemas/alerts.js';
import { parseMatchers, type Matcher } from '../../schemas/matchers.js';
import type { AlertFacts, FiringAlert } from '../core/gates/alerts.js';
import { withTimeout, type OpContext } from '../runtime/context.js';
import type { AlertmanagerPort } from './client.js';

const ASK_TIMEOUT_MS = 10_000;

export interface AlertGateAnswers {
  facts(plan: string): AlertFacts | undefined;
  ask(ctx: OpContext, plan: string, gate: AlertGate): Promise<void>;
}

const matchersOf = (text: string): Matcher[] => {
  const parsed = parseMatchers(text);
  // The schema refused unparsable lists; one that still fails here matches nothing rather than everything.
  return parsed.ok ? parsed.matchers : [{ name: '__unparsable__', op: '=', value: text }];
};

/** `port` undefined: the controller runs without --alertmanager-url, and every gate stays closed saying so. */
export function createAlertGateAnswers(port: AlertmanagerPort | undefined, intervalMs: number): AlertGateAnswers {
  const answers = new Map<string, AlertFacts>();
  return {
    facts: (plan) => answers.get(plan),
    async ask(ctx, plan, gate) {
      const observedAt = ctx.clock.now();
      if (!port) {
        answers.set(plan, {
          state: 'unavailable',
          message: 'the plan sets spec.alertGate but the controller runs without --alertmanager-url',
          observedAt,
          intervalMs,
        });
        return;
      }
      const call = withTimeout(ctx, ASK_TIMEOUT_MS);
      try {
        const matched: FiringAlert[] = [];
        for (const list of gate.alerts) matched.push(...(await port.firingAlerts(call, matchersOf(list))));
        const ignored: string[] = [];
        for (const list of gate.ignore)
          ignored.push(...(await port.firingAlerts(call, matchersOf(list))).map((a) => a.fingerprint));
        answers.set(plan, { state: 'observed', matched, ignored, observedAt: ctx.clock.now(), intervalMs });
      } catch (err) {
        if (ctx.signal.aborted) throw err;
        answers.set(plan, {
          state: 'unavailable',
          message: err instanceof Error ? err.message : String(err),
          observedAt: ctx.clock.now(),
          intervalMs,
        });
      }
    },
  };
}
