// How a watch shows the cluster as it changes, one display per audience: a terminal gets the view
// redrawn in place (alternate screen, cursor home, every line cleared to its end, the whole frame in
// one write, so nothing flickers; redrawn every second for the clocks and on a resize); a pipe or a
// file gets timestamped lines, only when something changed, and the full view at the end; -o json
// or yaml gets a new document whenever the status changed (JSON one per line, YAML `---` apart).
import {
  changedFacts,
  facts,
  fitHeight,
  fitLine,
  renderText,
  sameStatus,
  type StatusDocument,
} from '../core/status-view/index.js';
import { stringify } from 'yaml';

/** The document at a given time (the clocks of running jobs move between events). */
type View = (nowMs: number) => StatusDocument;

export interface Display {
  /** The cluster changed. */
  update(view: View): void;
  /** The watch ended: the last view stays where the viewer can read it. */
  close(): void;
}

export interface DisplayOptions {
  wide: boolean;
  zone: string;
  now: () => number;
}

const ENTER = '\x1b[?1049h\x1b[?25l'; // alternate screen, cursor hidden
const LEAVE = '\x1b[?25h\x1b[?1049l'; // cursor shown, main screen back
const HOME = '\x1b[H';
const CLEAR_LINE_END = '\x1b[K';
const CLEAR_SCREEN_END = '\x1b[J';

/** One frame: from the top left, each line cleared after its text, the rest of the screen cleared. */
function frame(lines: readonly string[]): string {
  return `${HOME}${lines.map((l) => `${l}${CLEAR_LINE_END}`).join('\n')}${CLEAR_SCREEN_END}`;
}

export function terminalDisplay(tty: NodeJS.WriteStream, o: DisplayOptions): Display {
  let view: View | undefined;
  let open = true;
  // One column short of the edge: a line that fills the last column leaves the cursor in the
  // terminal's pending-wrap state, where clearing to the line's end would erase its last character.
  const lines = (): string[] => {
    const nowMs = o.now();
    return view
      ? renderText(view(nowMs), { wide: o.wide, zone: o.zone, nowMs, width: Math.max(20, (tty.columns || 80) - 1) })
      : [];
  };
  const draw = (): void => {
    if (open && view) tty.write(frame(fitHeight(lines(), Math.max(2, tty.rows || 24))));
  };
  tty.write(ENTER);
  const ticker = setInterval(draw, 1000);
  tty.on('resize', draw);
  return {
    update: (v) => {
      view = v;
      draw();
    },
    close: () => {
      if (!open) return;
      open = false;
      clearInterval(ticker);
      tty.off('resize', draw);
      // The last view, printed on the main screen, stays in the scrollback.
      tty.write(`${LEAVE}${lines().join('\n')}\n`);
    },
  };
}

/** `2026-12-01T10:00:03Z`: a UTC timestamp for log lines. */
const stamp = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19)}Z`;

export function plainDisplay(write: (text: string) => void, width: number, o: DisplayOptions): Display {
  const seen = new Map<string, string>();
  let view: View | undefined;
  return {
    update: (v) => {
      view = v;
      const nowMs = o.now();
      const changed = changedFacts(seen, facts(v(nowMs), { wide: o.wide, zone: o.zone, nowMs, width }));
      for (const line of changed) write(`${fitLine(`${stamp(nowMs)} ${line}`, width)}\n`);
    },
    close: () => {
      if (!view) return;
      const nowMs = o.now();
      write(`\n${renderText(view(nowMs), { wide: o.wide, zone: o.zone, nowMs, width }).join('\n')}\n`);
    },
  };
}

export function documentDisplay(
  write: (text: string) => void,
  format: 'json' | 'yaml',
  o: Pick<DisplayOptions, 'now'>,
): Display {
  let last: StatusDocument | undefined;
  return {
    update: (v) => {
      const doc = v(o.now());
      if (sameStatus(last, doc)) return;
      last = doc;
      write(format === 'json' ? `${JSON.stringify(doc)}\n` : `---\n${stringify(doc, { lineWidth: 0 })}`);
    },
    close: () => undefined,
  };
}
