// `--watch`: follow the informers until every plan shown has finished (or one named is deleted, or
// the viewer stops it). Events come in bursts (a list, a status write per reconcile pass): the view
// is recomputed once per burst, at most every RENDER_MS.
import { missingPlans, statusDocument, watchOutcome } from '../core/status-view/index.js';
import type { Display } from './displays.js';
import type { StatusSource } from './source.js';

export type WatchEnd =
  { kind: 'completed' } | { kind: 'failed' } | { kind: 'deleted'; names: string[] } | { kind: 'stopped' };

const RENDER_MS = 100;

export interface WatchInput {
  source: StatusSource;
  /** The plans asked for by name; none: every plan. */
  names: readonly string[];
  display: Display;
  /** Aborted when the viewer stops the watch. */
  signal: AbortSignal;
  now: () => number;
}

export function watchPlans({ source, names, display, signal, now }: WatchInput): Promise<WatchEnd> {
  return new Promise<WatchEnd>((resolve) => {
    let done = false;
    let pending: NodeJS.Timeout | undefined;
    const finish = (end: WatchEnd): void => {
      if (done) return;
      done = true;
      clearTimeout(pending);
      signal.removeEventListener('abort', stop);
      resolve(end);
    };
    const stop = (): void => finish({ kind: 'stopped' });
    const evaluate = (): void => {
      pending = undefined;
      if (done) return;
      const input = source.input(names);
      display.update((nowMs) => statusDocument(input, nowMs));
      const gone = missingPlans(input);
      if (gone.length > 0) return finish({ kind: 'deleted', names: gone });
      const outcome = watchOutcome(statusDocument(input, now()));
      if (outcome !== 'running') finish({ kind: outcome });
    };
    source.onChange(() => {
      if (!done && pending === undefined) pending = setTimeout(evaluate, RENDER_MS);
    });
    if (signal.aborted) return stop();
    signal.addEventListener('abort', stop, { once: true });
    evaluate();
  });
}
