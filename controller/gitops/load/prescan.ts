// Checks done on raw bytes before the YAML parser sees them: size, encoding and nesting depth.
// The nesting check exists because `yaml` runs out of memory (a fatal, uncatchable crash) on
// inputs such as 20,000 nested `[`, which fit easily under the byte cap.

export type DecodeResult = { ok: true; text: string } | { ok: false; message: string };

const decoder = new TextDecoder('utf-8', { fatal: true });

export function decodePlanBytes(bytes: Uint8Array, maxBytes: number): DecodeResult {
  if (bytes.byteLength > maxBytes) {
    return { ok: false, message: `file is ${bytes.byteLength} bytes, more than the limit of ${maxBytes} bytes` };
  }
  if (bytes.includes(0)) return { ok: false, message: 'file is binary (contains NUL bytes), not YAML text' };
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    return { ok: false, message: 'file is not valid UTF-8 text' };
  }
  // `yaml` breaks lines at LF only: a file with bare CR endings reads as one long line and yields
  // dozens of unrelated errors (or exhausts the parser's stack), so name the real cause instead.
  if (/\r(?!\n)/.test(text)) {
    return {
      ok: false,
      message: 'file has bare CR line endings (classic Mac style): save it with LF (or CRLF) line endings',
    };
  }
  return { ok: true, text };
}

/** Finds the first place where flow collections (`[`/`{`), compact block entries (`- - -`) or
 *  implicit keys on one line (`a: b: c:`, an error `yaml` still parses recursively) nest deeper than
 *  `maxDepth`. Quoted strings and comments are skipped; it may over-count brackets in plain
 *  scalars, which only matters for text no plan contains. */
export function findExcessiveNesting(text: string, maxDepth: number): number | undefined {
  const state: ScanState = { flow: 0, quote: undefined, lineStart: true, keys: 0 };
  for (let i = 0; i < text.length; i++) {
    if (state.quote) {
      i = skipInQuote(text, i, state);
      continue;
    }
    if (state.lineStart) {
      state.lineStart = false;
      state.keys = 0;
      if (compactEntries(text, i) > maxDepth) return i;
    }
    i = scanChar(text, i, state);
    if (state.flow > maxDepth || state.keys > maxDepth) return i;
  }
  return undefined;
}

interface ScanState {
  flow: number;
  quote: string | undefined;
  lineStart: boolean;
  /** Block mapping indicators (`: `) on the current line, outside flow collections. */
  keys: number;
}

function skipInQuote(text: string, i: number, state: ScanState): number {
  const c = text[i];
  if (c === '\\' && state.quote === '"') return i + 1;
  if (c === state.quote) state.quote = undefined;
  return i;
}

/** Handles one character outside quotes; returns the index of the last character consumed. */
function scanChar(text: string, i: number, state: ScanState): number {
  const c = text[i];
  const prev = text[i - 1];
  if (c === '\n') state.lineStart = true;
  else if (c === '#' && (prev === undefined || /\s/.test(prev))) {
    const end = text.indexOf('\n', i);
    return end < 0 ? text.length : end - 1; // a comment runs to the end of its line
  } else if (c === '"' || c === "'") {
    // A quote starts a quoted scalar only where a value can start; `it's` is a plain scalar.
    if (prev === undefined || /[\s,[{:-]/.test(prev)) state.quote = c;
  } else countStructure(c, text[i + 1], state);
  return i;
}

/** Flow brackets and block mapping indicators, the characters that nest. */
function countStructure(c: string | undefined, next: string | undefined, state: ScanState): void {
  if (c === ':' && state.flow === 0 && (next === ' ' || next === '\n')) state.keys++;
  else if (c === '[' || c === '{') state.flow++;
  else if ((c === ']' || c === '}') && state.flow > 0) state.flow--;
}

/** Number of compact block entries (`- - - x`) starting the line at `i`. */
function compactEntries(text: string, i: number): number {
  let j = i;
  let compact = 0;
  while (text[j] === ' ') j++;
  while ((text[j] === '-' || text[j] === '?') && text[j + 1] === ' ') {
    compact++;
    j += 2;
    while (text[j] === ' ') j++;
  }
  return compact;
}

/** Lines that start a YAML document (`---` at the start of a line): a lower bound of the document
 *  count, so a file of thousands of empty documents is refused before `yaml` parses them all
 *  (11,000 of them took over a second). */
export function countDocumentStarts(text: string): number {
  return text.match(/^---(?=[ \t\r\n]|$)/gm)?.length ?? 0;
}
