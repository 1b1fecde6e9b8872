// The OutcomeError a promise rejects with: tests assert on its kind and reason, not on message text alone.
import assert from 'node:assert/strict';
import { isOutcomeError, type OutcomeError } from '../../controller/runtime/outcome.js';

export async function rejection(p: Promise<unknown>): Promise<OutcomeError> {
  try {
    await p;
  } catch (err) {
    assert.ok(isOutcomeError(err), `an OutcomeError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a rejection');
}
