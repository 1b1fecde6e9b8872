// Output for the two audiences: a TTY gets the live screen redrawn in place (ANSI: cursor up,
// clear to end), anything else (CI, a pipe, a file) gets plain timestamped lines of what changed.
import type { JobSnapshot, PlanSnapshot } from './watch.js';
import { changedFacts, duration, facts, liveScreen } from './view.js';

export interface Terminal {
  /** A message that stays (a step of the story). */
  say(line: string): void;
  /** The rollout changed (or, on a TTY, a second passed). */
  show(plan: PlanSnapshot | undefined, jobs: readonly JobSnapshot[]): void;
  /** Stop redrawing; what is on screen stays. */
  close(): void;
}

export function openTerminal(out: NodeJS.WriteStream, startedMs: number, now: () => number): Terminal {
  const stamp = (): string => `[${duration(now() - startedMs).padStart(6)}]`;
  if (!out.isTTY) {
    const seen = new Map<string, string>();
    return {
      say: (line) => out.write(`${stamp()} ${line}\n`),
      show: (plan, jobs) => {
        for (const line of changedFacts(seen, facts(plan, jobs))) out.write(`${stamp()} ${line}\n`);
      },
      close: () => undefined,
    };
  }
  let drawn = 0;
  let last: { plan: PlanSnapshot | undefined; jobs: readonly JobSnapshot[] } | undefined;
  const columns = (): number => out.columns || 120;
  const clear = (): void => {
    if (drawn > 0) out.write(`\x1b[${drawn}A\r\x1b[J`);
    drawn = 0;
  };
  const draw = (): void => {
    if (!last) return;
    clear();
    const lines = liveScreen(last.plan, last.jobs, now()).map((l) => (l.length > columns() - 1 ? `${l.slice(0, columns() - 2)}…` : l));
    out.write(`${lines.join('\n')}\n`);
    drawn = lines.length;
  };
  // Only the elapsed times move between events: one redraw a second, no API calls.
  const ticker = setInterval(draw, 1000);
  ticker.unref();
  return {
    say: (line) => {
      clear();
      out.write(`${stamp()} ${line}\n`);
      draw();
    },
    show: (plan, jobs) => {
      last = { plan, jobs };
      draw();
    },
    close: () => clearInterval(ticker),
  };
}
