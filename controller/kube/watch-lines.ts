// Splits a watch's byte stream into lines with a bound: a line longer than `maxBytes` is reported
// (with its start, for the warning) instead of being buffered until memory runs out.
/** A line that went past the bound; the rest of it up to its newline is skipped. */
export class OverlongLine {
  constructor(
    /** The line's first bytes. */
    readonly start: Buffer,
    readonly maxBytes: number,
  ) {}
}

export type SplitLine = Buffer | OverlongLine;

const START_BYTES = 480;

export class LineSplitter {
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** Inside an overlong line: drop bytes up to its newline. */
  private skipping = false;

  constructor(readonly maxBytes: number) {}

  /** The complete lines this chunk finishes, in order; empty lines (and a lone CR) are left out. */
  push(chunk: Uint8Array): SplitLine[] {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const out: SplitLine[] = [];
    let from = 0;
    for (let nl = buf.indexOf(10, from); nl !== -1; nl = buf.indexOf(10, from)) {
      this.take(buf.subarray(from, nl), true, out);
      from = nl + 1;
    }
    if (from < buf.length) this.take(buf.subarray(from), false, out);
    return out;
  }

  /** What is left of an unterminated last line when the stream ends, if anything. */
  rest(): Buffer | undefined {
    if (this.heldBytes === 0) return undefined;
    const rest = Buffer.concat(this.held);
    this.held = [];
    this.heldBytes = 0;
    return rest;
  }

  private take(piece: Buffer, ends: boolean, out: SplitLine[]): void {
    if (this.skipping) {
      if (ends) this.skipping = false;
      return;
    }
    if (this.heldBytes + piece.length > this.maxBytes) {
      const start = Buffer.concat([...this.held, piece.subarray(0, START_BYTES)]).subarray(0, START_BYTES);
      out.push(new OverlongLine(Buffer.from(start), this.maxBytes));
      this.held = [];
      this.heldBytes = 0;
      this.skipping = !ends;
      return;
    }
    if (!ends) {
      this.held.push(piece);
      this.heldBytes += piece.length;
      return;
    }
    const line = this.held.length === 0 ? piece : Buffer.concat([...this.held, piece]);
    this.held = [];
    this.heldBytes = 0;
    if (line.length === 0 || (line.length === 1 && line[0] === 13)) return;
    out.push(line);
  }
}
