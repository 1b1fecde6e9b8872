// Output for the two audiences: a TTY gets the live screen redrawn in place (ANSI: cursor up,
// clear to end), anything else (CI, a pipe, a file) gets plain timestamped lines of what changed.
// One display for any picture (one plan, two clusters side by side): a Screen says how to draw it.
// What a rollout looks like is the product's: `kangal-patch status`'s renderer (core/status-view).
import {
  changedFacts,
  facts,
  renderText,
  statusDocument,
  viewerZone,
  type Fact,
  type StatusInput,
} from '../../controller/core/status-view/index.js';
import { duration } from './view.js';

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
  /** The rollout changed (or, on a TTY, a second passed): the plan, its jobs and the nodes (watch.ts input()). */
  show(input: StatusInput): void;
  close(): void;
}

export function openDisplay<S>(
  out: NodeJS.WriteStream,
  startedMs: number,
  now: () => number,
  screen: Screen<S>,
): Display<S> {
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
    const lines = screen
      .lines(last.state, now(), columns())
      .map((l) => (l.length > columns() - 1 ? `${l.slice(0, columns() - 2)}…` : l));
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

/** The viewer's zone, for the times the status view shows. */
const demoZone = viewerZone(process.env['TZ'] || Intl.DateTimeFormat().resolvedOptions().timeZone);

/** The status view's lines of `input` at `nowMs`, `columns` wide; the plan named first in `input.names` waits for Git until it exists. */
export function statusLines(input: StatusInput, nowMs: number, columns: number): string[] {
  if (input.names.length > 0 && input.plans.length === 0)
    return [`plan ${input.names[0] ?? ''}: waiting for the controller to apply it from Git`];
  return renderText(statusDocument(input, nowMs), { wide: false, width: columns, zone: demoZone, nowMs });
}

/** The status view's keyed facts of `input` (the plain log prints those that changed). */
export function statusFacts(input: StatusInput, nowMs: number): Map<string, Fact> {
  if (input.names.length > 0 && input.plans.length === 0)
    return new Map([['plan', { signature: '', text: statusLines(input, nowMs, Infinity)[0] ?? '' }]]);
  return facts(statusDocument(input, nowMs), { wide: false, width: Infinity, zone: demoZone, nowMs });
}

const oneRollout: Screen<StatusInput> = {
  lines: (input, nowMs, columns) => statusLines(input, nowMs, columns - 1),
  facts: statusFacts,
};

/** The display of one rollout: `kangal-patch status <plan>`'s view, redrawn as it changes. */
export function openTerminal(out: NodeJS.WriteStream, startedMs: number, now: () => number): Terminal {
  const display = openDisplay(out, startedMs, now, oneRollout);
  return { say: (line) => display.say(line), show: (input) => display.show(input), close: () => display.close() };
}
