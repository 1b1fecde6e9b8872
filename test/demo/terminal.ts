// Output for the two audiences: a TTY gets the live screen redrawn in place (ANSI: cursor up,
// clear to end), anything else (CI, a pipe, a file) gets plain timestamped lines of what changed.
// One display for any picture (one plan, two clusters side by side): a Screen says how to draw it.
import type { JobSnapshot, PlanSnapshot } from './watch.js';
import { changedFacts, duration, facts, liveScreen, type Fact } from './view.js';

/** How a state is drawn: the lines of the live screen (TTY) and the keyed facts of the plain log. */
export interface Screen<S> {
  lines(state: S, nowMs: number, columns: number): string[];
  facts(state: S, nowMs: number): Map<string, Fact>;
}

export interface Display<S> {
  /** A message that stays (a step of the story). */
  say(line: string): void;
  /** The state changed (or, on a TTY, a second passed). */
  show(state: S): void;
  /** Stop redrawing; what is on screen stays. */
  close(): void;
}

export interface Terminal {
  say(line: string): void;
  /** The rollout changed (or, on a TTY, a second passed). */
  show(plan: PlanSnapshot | undefined, jobs: readonly JobSnapshot[]): void;
  close(): void;
}

export function openDisplay<S>(out: NodeJS.WriteStream, startedMs: number, now: () => number, screen: Screen<S>): Display<S> {
  const stamp = (): string => `[${duration(now() - startedMs).padStart(6)}]`;
  if (!out.isTTY) {
    const seen = new Map<string, string>();
    return {
      say: (line) => out.write(`${stamp()} ${line}\n`),
      show: (state) => {
        for (const line of changedFacts(seen, screen.facts(state, now()))) out.write(`${stamp()} ${line}\n`);
      },
      close: () => undefined,
    };
  }
  let drawn = 0;
  let closed = false;
  let last: { state: S } | undefined;
  const columns = (): number => out.columns || 120;
  const clear = (): void => {
    if (drawn > 0 && !closed) out.write(`\x1b[${drawn}A\r\x1b[J`);
    drawn = 0;
  };
  const draw = (): void => {
    // Closed: what is on screen stays, and lines printed after it (the summary) are never redrawn over.
    if (!last || closed) return;
    clear();
    const lines = screen.lines(last.state, now(), columns()).map((l) => (l.length > columns() - 1 ? `${l.slice(0, columns() - 2)}…` : l));
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
    show: (state) => {
      last = { state };
      draw();
    },
    close: () => {
      closed = true;
      clearInterval(ticker);
    },
  };
}

interface OneRollout {
  plan: PlanSnapshot | undefined;
  jobs: readonly JobSnapshot[];
}

const oneRollout: Screen<OneRollout> = {
  lines: (s, nowMs) => liveScreen(s.plan, s.jobs, nowMs),
  facts: (s) => facts(s.plan, s.jobs),
};

/** The display of one rollout: the plan, its groups, its active nodes. */
export function openTerminal(out: NodeJS.WriteStream, startedMs: number, now: () => number): Terminal {
  const display = openDisplay(out, startedMs, now, oneRollout);
  return { say: (line) => display.say(line), show: (plan, jobs) => display.show({ plan, jobs }), close: () => display.close() };
}
