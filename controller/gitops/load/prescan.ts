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
  try {
    return { ok: true, text: decoder.decode(bytes) };
  } catch {
    return { ok: false, message: 'file is not valid UTF-8 text' };
  }
}

/** Finds the first place where flow collections (`[`/`{`) or compact block entries (`- - -`) nest
 *  deeper than `maxDepth`. Quoted strings and comments are skipped; it may over-count brackets in
 *  plain scalars, which only matters for text no plan contains. */
export function findExcessiveNesting(text: string, maxDepth: number): number | undefined {
  let flow = 0;
  let quote: string | undefined;
  let lineStart = true;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (lineStart) {
      lineStart = false;
      if (compactEntries(text, i) > maxDepth) return i;
    }
    if (c === '\n') lineStart = true;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1] ?? ''))) {
      const end = text.indexOf('\n', i);
      if (end < 0) break;
      i = end - 1;
    } else if (c === '"' || c === "'") {
      // A quote starts a quoted scalar only where a value can start; `it's` is a plain scalar.
      if (i === 0 || /[\s,[{:-]/.test(text[i - 1] ?? '')) quote = c;
    } else if (c === '[' || c === '{') {
      if (++flow > maxDepth) return i;
    } else if ((c === ']' || c === '}') && flow > 0) flow--;
  }
  return undefined;
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
