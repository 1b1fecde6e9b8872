// Operation contexts for tests: the system clock, a fresh deadline, a signal the test may abort.
import { type Clock, systemClock } from '../../controller/runtime/clock.js';
import { type OpContext, rootContext } from '../../controller/runtime/context.js';

export interface TestContextOptions {
  timeoutMs?: number;
  clock?: Clock;
  signal?: AbortSignal;
}

export function testContext(opts: TestContextOptions = {}): OpContext {
  return rootContext(opts.clock ?? systemClock, opts.signal ?? new AbortController().signal, opts.timeoutMs ?? 20_000);
}
