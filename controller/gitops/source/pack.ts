// Reads a packfile the git server sent, trusting nothing in it, and writes the .idx isomorphic-git
// reads objects through. isomorphic-git's own indexing (`fetch`, `indexPack`) inflates every object
// of the pack into memory at once, synchronously: a few MB of deflated zeros become gigabytes and
// crash the controller. Here every object's declared size (its pack header) is checked before it is
// inflated:
// - an object over `maxObjectBytes` is never inflated into memory. Its deflated bytes are only run
//   through a streaming inflater (in the zlib thread pool, output dropped) to find where the next
//   object starts. It is left out of the index, as is any delta built on it, so reading it fails
//   and a file that names it is refused by path (tree.ts);
// - every inflated byte (kept or dropped objects, delta results) counts against
//   `maxInflatedBytes`, and objects against `maxObjects`; over either, the whole pack is refused.
// Kept objects are inflated one at a time (each at most `maxObjectBytes`), hashed, and let go; delta
// bases are re-read from the pack when no longer cached.
import { createHash } from 'node:crypto';
import { createInflate, crc32, inflateSync } from 'node:zlib';
import type { FetchLimits } from '../load/limits.js';

type ObjectType = 'commit' | 'tree' | 'blob' | 'tag';

export interface PackObject {
  type: ObjectType;
  /** Inflated size in bytes. */
  size: number;
  offset: number;
}

export interface ReadPack {
  /** SHA-1 of the pack (its trailer): the pack and idx file names. */
  packSha: string;
  /** Objects that can be read, by oid. */
  objects: Map<string, PackObject>;
  /** Objects left out: over `maxObjectBytes`, or deltas of such an object. */
  dropped: number;
  /** The .idx (version 2) of the kept objects. */
  idx: Buffer;
}

/** The pack breaks a cap (`overCap`) or is malformed: nothing of it is used. */
export class PackRefusedError extends Error {
  constructor(
    message: string,
    readonly overCap = false,
  ) {
    super(message);
    this.name = 'PackRefusedError';
  }
}

const TYPES: Record<number, ObjectType | 'ofs-delta' | 'ref-delta' | undefined> = {
  1: 'commit',
  2: 'tree',
  3: 'blob',
  4: 'tag',
  6: 'ofs-delta',
  7: 'ref-delta',
};
/** Inflated bytes between two yields to the event loop. */
const YIELD_EVERY = 4 * 1024 * 1024;
/** Delta bases kept inflated between objects. */
const BASE_CACHE_BYTES = 32 * 1024 * 1024;
const MAX_DELTA_DEPTH = 128;

interface Entry {
  offset: number;
  kind: ObjectType | 'ofs-delta' | 'ref-delta';
  /** The size in the object header (of the delta instructions, for a delta). */
  headerSize: number;
  dataStart: number;
  baseOffset?: number;
  baseOid?: string;
  crc: number;
  /** Once resolved: its type, inflated size and oid; `dropped` when it is left out. */
  type?: ObjectType;
  size?: number;
  oid?: string;
  dropped?: boolean;
}

export async function readPack(pack: Buffer, limits: FetchLimits): Promise<ReadPack> {
  const r = new PackReader(pack, limits);
  return r.read();
}

class PackReader {
  private inflated = 0;
  private sinceYield = 0;
  private readonly cache = new Map<number, Buffer>();
  private cached = 0;
  private readonly byOffset = new Map<number, Entry>();
  private readonly byOid = new Map<string, Entry>();

  constructor(
    private readonly pack: Buffer,
    private readonly limits: FetchLimits,
  ) {}

  async read(): Promise<ReadPack> {
    const pack = this.pack;
    if (pack.byteLength < 32 || pack.toString('latin1', 0, 4) !== 'PACK')
      throw new PackRefusedError('the server sent no valid pack (no PACK header)');
    const version = pack.readUInt32BE(4);
    if (version !== 2 && version !== 3)
      throw new PackRefusedError(`the server sent a pack of version ${version}; only versions 2 and 3 are read`);
    const count = pack.readUInt32BE(8);
    if (count > this.limits.maxObjects)
      throw new PackRefusedError(
        `the pack holds ${count} objects, over the cap of ${this.limits.maxObjects} objects on one fetch`,
        true,
      );
    const end = pack.byteLength - 20;
    const packSha = pack.subarray(end).toString('hex');
    if (createHash('sha1').update(pack.subarray(0, end)).digest('hex') !== packSha)
      throw new PackRefusedError('the pack is corrupt (its checksum does not match)');
    const entries = await this.scanAll(count, end);
    const objects = await this.resolveAll(entries);
    const dropped = entries.filter((e) => e.dropped === true).length;
    return {
      packSha,
      objects,
      dropped,
      idx: writeIdx(
        entries.filter((e) => e.dropped !== true && e.oid !== undefined),
        packSha,
      ),
    };
  }

  /** Resolves deltas in pack order; a ref-delta may name a base later in the pack, so passes repeat until nothing moves. */
  private async resolveAll(entries: Entry[]): Promise<Map<string, PackObject>> {
    const objects = new Map<string, PackObject>();
    let pending = entries;
    for (let progress = true; progress && pending.length > 0;) {
      const waiting: Entry[] = [];
      for (const e of pending) {
        if (e.kind === 'ref-delta' && !this.byOid.has(e.baseOid ?? '')) {
          waiting.push(e);
          continue;
        }
        await this.resolve(e);
        if (e.dropped === true || e.oid === undefined || e.type === undefined || e.size === undefined) continue;
        objects.set(e.oid, { type: e.type, size: e.size, offset: e.offset });
        this.byOid.set(e.oid, e);
      }
      progress = waiting.length < pending.length;
      pending = waiting;
    }
    for (const e of pending) e.dropped = true; // its base is not in the pack (a thin pack) or was dropped
    return objects;
  }

  private async scanAll(count: number, end: number): Promise<Entry[]> {
    const entries: Entry[] = [];
    let pos = 12;
    for (let i = 0; i < count; i++) {
      if (pos >= end) throw new PackRefusedError(`the pack ends after ${i} of its ${count} objects`);
      const { entry, next } = await this.scan(pos);
      entries.push(entry);
      this.byOffset.set(entry.offset, entry);
      entry.crc = crc32(this.pack.subarray(pos, next));
      pos = next;
    }
    if (pos !== end) throw new PackRefusedError('the pack has bytes after its last object');
    return entries;
  }

  /** Reads one object's header and finds where it ends (`next`); inflates nothing over the object cap. */
  private async scan(offset: number): Promise<{ entry: Entry; next: number }> {
    const pack = this.pack;
    const { kind, size, end } = this.readHeader(offset);
    const entry: Entry = { offset, kind, headerSize: size, dataStart: 0, crc: 0 };
    const pos = this.readBase(entry, end);
    entry.dataStart = pos;
    this.count(size);
    let consumed: number;
    if (size > this.limits.maxObjectBytes) {
      entry.dropped = true;
      consumed = await skipDeflated(pack.subarray(pos, pack.byteLength - 20), size, offset);
    } else {
      const data = this.inflateAt(entry);
      consumed = data.consumed;
      // Non-delta objects are hashed now, while inflated; deltas once their base is known.
      if (kind !== 'ofs-delta' && kind !== 'ref-delta') this.identify(entry, kind, data.bytes);
    }
    await this.maybeYield(size);
    return { entry, next: pos + consumed };
  }

  /** An object's type and declared size, and where its header ends. */
  private readHeader(offset: number): { kind: Entry['kind']; size: number; end: number } {
    let pos = offset;
    let byte = this.byte(pos++);
    const kind = TYPES[(byte >> 4) & 7];
    if (kind === undefined)
      throw new PackRefusedError(`the pack has an object of unknown type ${(byte >> 4) & 7} at offset ${offset}`);
    let size = byte & 15;
    for (let shift = 4; byte & 0x80; shift += 7) {
      byte = this.byte(pos++);
      if (shift > 49) throw new PackRefusedError(`the pack declares an impossible object size at offset ${offset}`);
      size += (byte & 0x7f) * 2 ** shift;
    }
    return { kind, size, end: pos };
  }

  /** A delta names its base right after its header (an offset back, or an oid): sets it on `entry`; returns where the object data starts. */
  private readBase(entry: Entry, start: number): number {
    const { pack } = this;
    const { offset, kind } = entry;
    let pos = start;
    if (kind === 'ofs-delta') {
      let byte = this.byte(pos++);
      let back = byte & 0x7f;
      while (byte & 0x80) {
        byte = this.byte(pos++);
        back = (back + 1) * 128 + (byte & 0x7f);
        if (back > offset) break;
      }
      if (back <= 0 || back > offset || !this.byOffset.has(offset - back))
        throw new PackRefusedError(`the pack has a delta at offset ${offset} whose base is not an object before it`);
      entry.baseOffset = offset - back;
    } else if (kind === 'ref-delta') {
      if (pos + 20 > pack.byteLength - 20)
        throw new PackRefusedError(`the pack ends inside the object at offset ${offset}`);
      entry.baseOid = pack.subarray(pos, pos + 20).toString('hex');
      pos += 20;
    }
    return pos;
  }

  private byte(pos: number): number {
    if (pos >= this.pack.byteLength - 20) throw new PackRefusedError('the pack ends inside an object header');
    return this.pack[pos] as number;
  }

  private count(bytes: number): void {
    this.inflated += bytes;
    if (this.inflated > this.limits.maxInflatedBytes) {
      throw new PackRefusedError(
        `the pack inflates to over the cap of ${this.limits.maxInflatedBytes} bytes on one fetch`,
        true,
      );
    }
  }

  private async maybeYield(bytes: number): Promise<void> {
    this.sinceYield += bytes;
    if (this.sinceYield < YIELD_EVERY) return;
    this.sinceYield = 0;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  /** Inflates the object data of `e` (at most its header size, which is within the object cap). */
  private inflateAt(e: Entry): { bytes: Buffer; consumed: number } {
    try {
      const { buffer, engine } = inflateSync(this.pack.subarray(e.dataStart, this.pack.byteLength - 20), {
        info: true,
        maxOutputLength: Math.max(1, e.headerSize),
      }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
      if (buffer.byteLength !== e.headerSize)
        throw new PackRefusedError(
          `the object at offset ${e.offset} inflates to ${buffer.byteLength} bytes, not the ${e.headerSize} its header says`,
        );
      return { bytes: buffer, consumed: engine.bytesWritten };
    } catch (err) {
      if (err instanceof PackRefusedError) throw err;
      throw new PackRefusedError(
        `the object at offset ${e.offset} does not inflate to the ${e.headerSize} bytes its header says`,
      );
    }
  }

  private identify(e: Entry, type: ObjectType, content: Buffer): void {
    e.type = type;
    e.size = content.byteLength;
    e.oid = createHash('sha1').update(`${type} ${content.byteLength}\0`).update(content).digest('hex');
    this.remember(e.offset, content);
  }

  private remember(offset: number, content: Buffer): void {
    if (content.byteLength > BASE_CACHE_BYTES / 4) return;
    this.cache.set(offset, content);
    this.cached += content.byteLength;
    for (const [k, v] of this.cache) {
      if (this.cached <= BASE_CACHE_BYTES) break;
      this.cache.delete(k);
      this.cached -= v.byteLength;
    }
  }

  /** Gives a delta its type, size and oid, or drops it (its base dropped, or its result over the cap). */
  private async resolve(e: Entry): Promise<void> {
    if (e.dropped === true || (e.kind !== 'ofs-delta' && e.kind !== 'ref-delta')) return;
    const base = this.baseOf(e);
    if (!base || base.dropped === true || base.type === undefined) {
      e.dropped = true;
      return;
    }
    const delta = this.inflateAt(e).bytes;
    const { baseSize, resultSize, at } = deltaSizes(delta, e.offset);
    if (resultSize > this.limits.maxObjectBytes) {
      e.dropped = true;
      return;
    }
    this.count(resultSize);
    const baseContent = this.contentOf(base, 0);
    if (baseContent.byteLength !== baseSize)
      throw new PackRefusedError(
        `the delta at offset ${e.offset} expects a base of ${baseSize} bytes, not ${baseContent.byteLength}`,
      );
    this.identify(e, base.type, applyDelta({ delta, start: at, resultSize, offset: e.offset }, baseContent));
    await this.maybeYield(resultSize);
  }

  private baseOf(e: Entry): Entry | undefined {
    return e.kind === 'ofs-delta' ? this.byOffset.get(e.baseOffset ?? -1) : this.byOid.get(e.baseOid ?? '');
  }

  /** The content of a kept object, from the cache or re-read from the pack. */
  private contentOf(e: Entry, depth: number): Buffer {
    const hit = this.cache.get(e.offset);
    if (hit) return hit;
    if (depth > MAX_DELTA_DEPTH)
      throw new PackRefusedError(`the pack has a delta chain longer than ${MAX_DELTA_DEPTH} at offset ${e.offset}`);
    const data = this.inflateAt(e).bytes;
    if (e.kind !== 'ofs-delta' && e.kind !== 'ref-delta') return data;
    const base = this.baseOf(e);
    if (!base) throw new PackRefusedError(`the delta at offset ${e.offset} lost its base`);
    const { resultSize, at } = deltaSizes(data, e.offset);
    const out = applyDelta({ delta: data, start: at, resultSize, offset: e.offset }, this.contentOf(base, depth + 1));
    this.remember(e.offset, out);
    return out;
  }
}

/** Runs a deflate stream through zlib without keeping its output; returns how many input bytes it took. */
function skipDeflated(input: Buffer, size: number, offset: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const z = createInflate({ chunkSize: 256 * 1024 });
    let out = 0;
    const fail = (): void => {
      z.destroy();
      reject(
        new PackRefusedError(`the object at offset ${offset} does not inflate to the ${size} bytes its header says`),
      );
    };
    z.on('data', (chunk: Buffer) => {
      out += chunk.byteLength;
      if (out > size) fail();
    });
    z.on('error', fail);
    z.on('end', () => {
      if (out === size) resolve(z.bytesWritten);
      else fail();
    });
    z.end(input);
  });
}

/** The two sizes a delta starts with (base, result), and where its instructions start. */
function deltaSizes(delta: Buffer, offset: number): { baseSize: number; resultSize: number; at: number } {
  let at = 0;
  const varint = (): number => {
    let n = 0;
    for (let shift = 0; ; shift += 7) {
      if (at >= delta.byteLength || shift > 49)
        throw new PackRefusedError(`the delta at offset ${offset} is malformed`);
      const b = delta[at++] as number;
      n += (b & 0x7f) * 2 ** shift;
      if (!(b & 0x80)) return n;
    }
  };
  const baseSize = varint();
  const resultSize = varint();
  return { baseSize, resultSize, at };
}

/** A delta's instructions: `delta` from `start` (past its two sizes) builds `resultSize` bytes; `offset` (in the pack) names it in errors. */
interface DeltaInstructions {
  delta: Buffer;
  start: number;
  resultSize: number;
  offset: number;
}

/** Git's delta format: copy ranges of the base and insert literal bytes. */
function applyDelta({ delta, start, resultSize, offset }: DeltaInstructions, base: Buffer): Buffer {
  const out = Buffer.allocUnsafe(resultSize);
  let o = 0;
  let at = start;
  const bad = (): PackRefusedError => new PackRefusedError(`the delta at offset ${offset} is malformed`);
  while (at < delta.byteLength) {
    const op = delta[at++] as number;
    if (op & 0x80) {
      const copy = copyOp(delta, at, op);
      at = copy.next;
      if (copy.offset + copy.size > base.byteLength || o + copy.size > resultSize) throw bad();
      base.copy(out, o, copy.offset, copy.offset + copy.size);
      o += copy.size;
    } else if (op > 0) {
      if (at + op > delta.byteLength || o + op > resultSize) throw bad();
      delta.copy(out, o, at, at + op);
      o += op;
      at += op;
    } else throw bad();
  }
  if (o !== resultSize) throw bad();
  return out;
}

/** A copy instruction: which bytes of `op` say which offset and size bytes follow. */
function copyOp(delta: Buffer, start: number, op: number): { offset: number; size: number; next: number } {
  let at = start;
  let offset = 0;
  let size = 0;
  for (let i = 0; i < 4; i++) if (op & (1 << i)) offset += (delta[at++] ?? 0) * 2 ** (8 * i);
  for (let i = 0; i < 3; i++) if (op & (16 << i)) size += (delta[at++] ?? 0) * 2 ** (8 * i);
  return { offset, size: size === 0 ? 0x10000 : size, next: at };
}

/** A version 2 pack index of `entries` (offsets below 2 GiB: the fetch cap keeps packs far smaller). */
function writeIdx(entries: Entry[], packSha: string): Buffer {
  const sorted = entries
    .map((e) => ({ oid: Buffer.from(e.oid as string, 'hex'), crc: e.crc, offset: e.offset }))
    .sort((a, b) => Buffer.compare(a.oid, b.oid));
  const n = sorted.length;
  const out = Buffer.alloc(8 + 256 * 4 + n * 28 + 40);
  out.writeUInt32BE(0xff744f63, 0);
  out.writeUInt32BE(2, 4);
  const fanout = new Uint32Array(256);
  for (const e of sorted) fanout[e.oid[0] as number] = (fanout[e.oid[0] as number] as number) + 1;
  for (let f = 0, total = 0; f < 256; f++) {
    total += fanout[f] as number;
    out.writeUInt32BE(total, 8 + f * 4);
  }
  let at = 8 + 256 * 4;
  for (const e of sorted) at += e.oid.copy(out, at);
  for (const e of sorted) at = out.writeUInt32BE(e.crc >>> 0, at);
  for (const e of sorted) {
    if (e.offset >= 2 ** 31) throw new PackRefusedError('the pack is too large to index');
    at = out.writeUInt32BE(e.offset, at);
  }
  at += Buffer.from(packSha, 'hex').copy(out, at);
  createHash('sha1').update(out.subarray(0, at)).digest().copy(out, at);
  return out;
}
