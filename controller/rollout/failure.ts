// Any error of an adapter call as the decision sees it: transient or not, a reason, a message.
// Adapters already classified it; this only reads their fields.
import type { CallFailure } from '../core/job/index.js';
import { OutcomeKind, isOutcomeError } from '../runtime/outcome.js';
import { isTalosApiError } from '../talos/index.js';

export function callFailure(err: unknown): CallFailure {
  if (isTalosApiError(err)) return { transient: err.transient, reason: err.kind, message: err.message };
  if (isOutcomeError(err))
    return { transient: err.kind !== OutcomeKind.Stalled, reason: err.reason, message: err.message };
  return { transient: true, reason: 'Unknown', message: err instanceof Error ? err.message : String(err) };
}
