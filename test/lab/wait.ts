// Waiting on a condition with a deadline: the one way tests and the lab wait for something.
import { setTimeout as delay } from 'node:timers/promises';

export interface WaitOptions {
  timeoutMs: number;
  /** How often to re-check; conditions here are cheap local reads. */
  intervalMs?: number;
  /** Named in the timeout error. */
  description: string;
}

export async function waitFor<T>(check: () => Promise<T | undefined> | T | undefined, opts: WaitOptions): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const why = lastError instanceof Error ? `: last error: ${lastError.message}` : '';
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${opts.description}${why}`);
    }
    await delay(opts.intervalMs ?? 100);
  }
}
