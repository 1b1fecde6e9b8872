// The git smart-HTTP upload-pack exchange (protocol v0/v1, stateless) for one shallow fetch: the
// ref advertisement, a request for one commit at depth 1, and the pack demultiplexed from the
// side-band of the answer. Written here rather than through isomorphic-git's `fetch`, which buffers
// the pack whole and inflates every object of it before anyone can look at a size (pack.ts).
// Pure: bytes in, bytes out; remote.ts does the HTTP.

export class UploadPackError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UploadPackError';
  }
}

const text = new TextDecoder();

/** One pkt-line: four hex digits of length (their own included), then the payload. */
export function pktLine(payload: string): Buffer {
  const body = Buffer.from(payload, 'utf8');
  return Buffer.concat([Buffer.from((body.byteLength + 4).toString(16).padStart(4, '0'), 'latin1'), body]);
}
const FLUSH = Buffer.from('0000', 'latin1');

export interface Advertisement {
  /** The commit `refs/heads/<branch>` points at; undefined when the branch does not exist. */
  head: string | undefined;
  capabilities: Set<string>;
}

/** Reads the answer to `GET info/refs?service=git-upload-pack` (v0). */
export function parseAdvertisement(body: Buffer, branch: string): Advertisement {
  const ref = `refs/heads/${branch}`;
  const out: Advertisement = { head: undefined, capabilities: new Set() };
  let first = true;
  for (const line of pktLines(body)) {
    if (line === undefined || line.startsWith('# service=')) continue;
    const [refPart, caps] = splitOnce(line.replace(/\n$/, ''), '\0');
    if (first && caps !== undefined) for (const c of caps.split(' ')) if (c !== '') out.capabilities.add(c);
    first = false;
    const [oid, name] = splitOnce(refPart, ' ');
    if (name === ref && /^[0-9a-f]{40}$/.test(oid)) out.head = oid;
  }
  return out;
}

/** The body of the POST to git-upload-pack: this one commit, without its history, no progress text. */
export function uploadPackRequest(oid: string, capabilities: ReadonlySet<string>): Buffer {
  for (const need of ['shallow', 'side-band-64k']) {
    if (!capabilities.has(need))
      throw new UploadPackError(`the git server does not offer "${need}", which a shallow fetch needs`);
  }
  const caps = [
    'side-band-64k',
    'shallow',
    'no-progress',
    'agent=kangal-patch',
    ...(capabilities.has('ofs-delta') ? ['ofs-delta'] : []),
  ].join(' ');
  return Buffer.concat([pktLine(`want ${oid} ${caps}\n`), pktLine('deepen 1\n'), FLUSH, pktLine('done\n')]);
}

/**
 * Demultiplexes the answer as it arrives: shallow lines and NAK, then side-band packets whose band 1
 * is the pack; band 2 (progress) is dropped, band 3 is the server's error.
 */
export class UploadPackResponse {
  private pending: Buffer = Buffer.alloc(0);
  private inPack = false;
  private ended = false;
  private readonly chunks: Buffer[] = [];
  private bytes = 0;

  /** Pack bytes received so far. */
  get packBytes(): number {
    return this.bytes;
  }

  push(chunk: Uint8Array): void {
    this.pending = this.pending.byteLength === 0 ? Buffer.from(chunk) : Buffer.concat([this.pending, chunk]);
    let at = 0;
    while (!this.ended && this.pending.byteLength - at >= 4) {
      const length = Number.parseInt(this.pending.toString('latin1', at, at + 4), 16);
      if (!/^[0-9a-f]{4}$/i.test(this.pending.toString('latin1', at, at + 4)))
        throw new UploadPackError('the git server sent a malformed answer (not pkt-lines)');
      if (length < 4) {
        at += 4;
        if (length === 0 && this.inPack) this.ended = true;
        continue;
      }
      if (this.pending.byteLength - at < length) break;
      this.packet(this.pending.subarray(at + 4, at + length));
      at += length;
    }
    this.pending = this.pending.subarray(at);
  }

  private packet(payload: Buffer): void {
    if (!this.inPack) {
      const line = text.decode(payload).replace(/\n$/, '');
      if (line.startsWith('ERR ')) throw new UploadPackError(`the git server refused the fetch: ${line.slice(4, 200)}`);
      if (line === 'NAK' || line.startsWith('ACK ')) this.inPack = true;
      return; // shallow / unshallow lines
    }
    const band = payload[0];
    if (band === 1) {
      this.chunks.push(Buffer.from(payload.subarray(1)));
      this.bytes += payload.byteLength - 1;
    } else if (band === 3) {
      throw new UploadPackError(`the git server failed the fetch: ${text.decode(payload.subarray(1, 201)).trim()}`);
    } else if (band !== 2) {
      throw new UploadPackError('the git server sent a malformed answer (unknown side-band)');
    }
  }

  /** The pack, once the answer is complete. */
  pack(): Buffer {
    if (!this.ended) throw new UploadPackError('the git server ended the answer before the pack was complete');
    return Buffer.concat(this.chunks);
  }
}

function* pktLines(body: Buffer): Generator<string | undefined> {
  for (let at = 0; at + 4 <= body.byteLength;) {
    const head = body.toString('latin1', at, at + 4);
    if (!/^[0-9a-f]{4}$/i.test(head)) throw new UploadPackError('the git server sent a malformed ref advertisement');
    const length = Number.parseInt(head, 16);
    if (length < 4) {
      at += 4;
      yield undefined;
      continue;
    }
    if (at + length > body.byteLength) throw new UploadPackError('the git server sent a truncated ref advertisement');
    yield text.decode(body.subarray(at + 4, at + length));
    at += length;
  }
}

function splitOnce(s: string, sep: string): [string, string | undefined] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, undefined] : [s.slice(0, i), s.slice(i + sep.length)];
}
