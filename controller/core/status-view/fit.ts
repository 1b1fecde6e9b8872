// Lines that fit the terminal: cut with an ellipsis at `width` characters, and a frame cut to the
// screen's height (a frame taller than the screen would scroll, and the next one would not start at
// the top). Pure.

/** `line` cut to `width` characters, the last one an ellipsis; unchanged when it fits or width is Infinity. */
export function fitLine(line: string, width: number): string {
  if (!Number.isFinite(width) || line.length <= width) return line;
  if (width <= 1) return '…'.slice(0, Math.max(0, width));
  return `${line.slice(0, width - 1)}…`;
}

/** A clause in pieces: the first of at most `firstRoom` characters, the others of `room`, split between words (at most `maxPieces`; fitWidth cuts the last). */
function pieces(part: string, firstRoom: number, room: number, maxPieces: number): string[] {
  const out: string[] = [];
  let rest = part;
  let limit = firstRoom;
  while (rest.length > limit && out.length < maxPieces - 1) {
    const space = rest.lastIndexOf(' ', limit);
    const at = space > limit / 2 ? space : limit;
    out.push(rest.slice(0, at));
    rest = rest.slice(at).trimStart();
    limit = room;
  }
  return [...out, rest];
}

/** Room on a line for the words of a clause: a clause is not split into slivers narrower than this. */
const MIN_ROOM = 20;

/** How wrapParts lays clauses out: joined by `sep` within `width`, a continued line indented by `indent`. */
export interface WrapLayout {
  sep: string;
  width: number;
  indent: string;
}

/**
 * `parts` joined by `sep` on as few lines as fit `width`: a part that does not fit on the current
 * line starts the next one, indented by `indent`; a part longer than a whole line is split between
 * words (three lines at most, then fitWidth cuts it). The first line starts with `first`.
 */
export function wrapParts(first: string, parts: readonly string[], { sep, width, indent }: WrapLayout): string[] {
  const lines: string[] = [];
  let line = first;
  let fresh = true;
  for (const part of parts.filter((p) => p !== '')) {
    const joined = fresh ? `${line}${part}` : `${line}${sep}${part}`;
    if (joined.length <= width) {
      line = joined;
      fresh = false;
      continue;
    }
    const room = width - indent.length;
    // Begun on the line it shares with `first` when there is room for words there, else on a line of its own.
    const here = fresh && width - line.length >= MIN_ROOM;
    const [head, ...tail] = room < MIN_ROOM ? [part] : pieces(part, here ? width - line.length : room, room, 3);
    if (here) line = `${line}${head ?? ''}`;
    else {
      if (line.trim() !== '') lines.push(line.trimEnd());
      line = `${indent}${head ?? ''}`;
    }
    for (const piece of tail) {
      lines.push(line);
      line = `${indent}${piece}`;
    }
    fresh = false;
  }
  return [...lines, line];
}

export function fitWidth(lines: readonly string[], width: number): string[] {
  return lines.map((l) => fitLine(l, width));
}

/** At most `rows` lines; the last one says how many were left out. */
export function fitHeight(lines: readonly string[], rows: number): string[] {
  if (!Number.isFinite(rows) || lines.length <= rows) return [...lines];
  if (rows <= 1) return lines.slice(0, Math.max(0, rows));
  const kept = lines.slice(0, rows - 1);
  return [...kept, `… ${lines.length - kept.length} more line(s): a taller terminal, or name one plan`];
}
