// Reading a fetched pack without trusting it (controller/gitops/source/pack.ts) and the upload-pack
// exchange around it (upload-pack.ts): sizes are checked before anything is inflated, an object over
// the cap is left out (with every delta built on it), caps on the whole pack refuse it, and what is
// kept reads back through isomorphic-git with the .idx written here.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import git from 'isomorphic-git';
import { DEFAULT_FETCH_LIMITS, type FetchLimits } from '../../../controller/gitops/load/limits.js';
import { PackRefusedError, readPack } from '../../../controller/gitops/source/pack.js';
import {
  parseAdvertisement,
  pktLine,
  UploadPackError,
  UploadPackResponse,
  uploadPackRequest,
} from '../../../controller/gitops/source/upload-pack.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as (options?: { type: 'minor' | 'major' }) => void;

type Kind = 'commit' | 'tree' | 'blob';
const TYPE_NUM: Record<Kind | 'ofs-delta' | 'ref-delta', number> = {
  commit: 1,
  tree: 2,
  blob: 3,
  'ofs-delta': 6,
  'ref-delta': 7,
};

const oidOf = (type: Kind, content: Buffer): string =>
  createHash('sha1').update(`${type} ${content.byteLength}\0`).update(content).digest('hex');

function header(type: number, size: number): Buffer {
  const bytes = [(size > 15 ? 0x80 : 0) | (type << 4) | (size & 15)];
  for (let rest = Math.floor(size / 16); rest > 0; rest = Math.floor(rest / 128))
    bytes.push((rest >= 128 ? 0x80 : 0) | (rest & 0x7f));
  return Buffer.from(bytes);
}
function varint(n: number): Buffer {
  const bytes: number[] = [];
  do {
    bytes.push((n >= 128 ? 0x80 : 0) | (n & 0x7f));
    n = Math.floor(n / 128);
  } while (n > 0);
  return Buffer.from(bytes);
}
/** Git's ofs-delta back-reference encoding. */
function ofsEncode(back: number): Buffer {
  let n = back;
  const out = [n & 0x7f];
  while ((n >>= 7) > 0) out.unshift(0x80 | (--n & 0x7f));
  return Buffer.from(out);
}

interface Obj {
  type: Kind | 'ofs-delta' | 'ref-delta';
  /** Content (or delta instructions) as stored. */
  data: Buffer;
  /** Declared size, when it should lie. */
  declared?: number;
  /** Index of the base object (ofs-delta). */
  base?: number;
  /** The base's oid (ref-delta). */
  baseOid?: string;
}

/** A pack of `objects`, in order; returns it with each object's offset. */
function buildPack(objects: Obj[]): Buffer {
  const parts: Buffer[] = [Buffer.from('PACK'), Buffer.from([0, 0, 0, 2]), Buffer.alloc(4)];
  parts[2]?.writeUInt32BE(objects.length);
  const offsets: number[] = [];
  let at = 12;
  for (const o of objects) {
    offsets.push(at);
    const head = [header(TYPE_NUM[o.type], o.declared ?? o.data.byteLength)];
    if (o.type === 'ofs-delta') head.push(ofsEncode(at - (offsets[o.base ?? 0] as number)));
    if (o.type === 'ref-delta') head.push(Buffer.from(o.baseOid ?? '', 'hex'));
    const body = Buffer.concat([...head, deflateSync(o.data)]);
    parts.push(body);
    at += body.byteLength;
  }
  const pack = Buffer.concat(parts);
  return Buffer.concat([pack, createHash('sha1').update(pack).digest()]);
}

/** A delta that copies all of `base` and appends `extra`. */
function appendDelta(base: Buffer, extra: string): Buffer {
  const add = Buffer.from(extra);
  const copy = [
    0x80 | 0x01 | 0x10 | 0x20 | 0x40,
    0,
    base.byteLength & 0xff,
    (base.byteLength >> 8) & 0xff,
    (base.byteLength >> 16) & 0xff,
  ];
  return Buffer.concat([
    varint(base.byteLength),
    varint(base.byteLength + add.byteLength),
    Buffer.from(copy),
    Buffer.from([add.byteLength]),
    add,
  ]);
}

function treeOf(entries: { name: string; oid: string }[]): Buffer {
  return Buffer.concat(
    entries.map((e) => Buffer.concat([Buffer.from(`100644 ${e.name}\0`), Buffer.from(e.oid, 'hex')])),
  );
}

const limits = (o: Partial<FetchLimits> = {}): FetchLimits => ({ ...DEFAULT_FETCH_LIMITS, maxObjectBytes: 1024, ...o });

describe('gitops/source: reading a fetched pack', function () {
  let dir: string;
  before(async function () {
    dir = await mkdtemp(join(tmpdir(), 'kangal-pack-'));
  });
  after(async function () {
    await rm(dir, { recursive: true, force: true });
  });

  const plan = Buffer.from('kind: PatchPlan\nmetadata:\n  name: a\n');
  const big = Buffer.alloc(64 * 1024 * 1024); // 64 MiB of zeros: 64 KiB deflated

  it('keeps what is within the cap (deltas resolved, oids right), leaves out an object over it and its deltas, and reads back through isomorphic-git', async function () {
    const delta = appendDelta(plan, '# more\n');
    const planV2 = Buffer.concat([plan, Buffer.from('# more\n')]);
    const bigDelta = appendDelta(big, 'x');
    const tree = treeOf([
      { name: 'a.yaml', oid: oidOf('blob', plan) },
      { name: 'b.yaml', oid: oidOf('blob', planV2) },
      { name: 'big.yaml', oid: oidOf('blob', big) },
    ]);
    const commit = Buffer.from(`tree ${oidOf('tree', tree)}\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\n\nm\n`);
    const pack = buildPack([
      { type: 'commit', data: commit },
      { type: 'tree', data: tree },
      { type: 'blob', data: plan },
      { type: 'ofs-delta', data: delta, base: 2 },
      { type: 'blob', data: big },
      { type: 'ofs-delta', data: bigDelta, base: 4 },
    ]);
    assert.ok(pack.byteLength < 256 * 1024, `${pack.byteLength} bytes`);
    gc();
    const before = process.memoryUsage().arrayBuffers;
    let peak = before;
    // What is live, not what is garbage: the inflater drops a 256 KiB chunk per turn of the event
    // loop and how many pile up before V8 collects them depends on the machine. A scavenge before
    // each sample frees the dropped chunks; an object held in memory would survive it.
    const sampler = setInterval(() => {
      gc({ type: 'minor' });
      peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    }, 1);
    const read = await readPack(pack, limits());
    clearInterval(sampler);
    assert.ok(
      peak - before < 48 * 1024 * 1024,
      `the 64 MiB object is never held in memory (peak +${Math.round((peak - before) / 1048576)} MiB)`,
    );
    assert.deepEqual(
      [...read.objects.keys()].sort(),
      [oidOf('commit', commit), oidOf('tree', tree), oidOf('blob', plan), oidOf('blob', planV2)].sort(),
    );
    assert.equal(read.dropped, 2);
    assert.deepEqual(read.objects.get(oidOf('blob', planV2)), {
      type: 'blob',
      size: planV2.byteLength,
      offset: read.objects.get(oidOf('blob', planV2))?.offset,
    });

    const gitdir = join(dir, 'g.git');
    await mkdir(join(gitdir, 'objects', 'pack'), { recursive: true });
    await writeFile(join(gitdir, 'objects', 'pack', `pack-${read.packSha}.pack`), pack);
    await writeFile(join(gitdir, 'objects', 'pack', `pack-${read.packSha}.idx`), read.idx);
    const cache = {};
    assert.equal(
      Buffer.from((await git.readBlob({ fs, gitdir, oid: oidOf('blob', planV2), cache })).blob).toString(),
      planV2.toString(),
    );
    assert.deepEqual(
      (await git.readTree({ fs, gitdir, oid: oidOf('tree', tree), cache })).tree.map((e) => e.path),
      ['a.yaml', 'b.yaml', 'big.yaml'],
    );
    await assert.rejects(git.readBlob({ fs, gitdir, oid: oidOf('blob', big), cache }), { code: 'NotFoundError' });
  });

  it('resolves a ref-delta whose base comes later in the pack; one whose base is not in the pack is left out', async function () {
    const v2 = Buffer.concat([plan, Buffer.from('x')]);
    const read = await readPack(
      buildPack([
        { type: 'ref-delta', data: appendDelta(plan, 'x'), baseOid: oidOf('blob', plan) },
        { type: 'ref-delta', data: appendDelta(plan, 'y'), baseOid: 'f'.repeat(40) },
        { type: 'blob', data: plan },
      ]),
      limits(),
    );
    assert.deepEqual([...read.objects.keys()].sort(), [oidOf('blob', plan), oidOf('blob', v2)].sort());
    assert.equal(read.dropped, 1);
  });

  it('refuses a pack whose objects inflate past the cap on one fetch, before inflating them', async function () {
    const pack = buildPack([
      { type: 'blob', data: big },
      { type: 'blob', data: big },
    ]);
    await assert.rejects(readPack(pack, limits({ maxInflatedBytes: 100 * 1024 * 1024 })), (err: unknown) => {
      assert.ok(err instanceof PackRefusedError);
      assert.equal(err.overCap, true);
      assert.equal(err.message, `the pack inflates to over the cap of ${100 * 1024 * 1024} bytes on one fetch`);
      return true;
    });
  });

  it('refuses more objects than the cap, and malformed packs (lying sizes, bad checksum, delta to nowhere) as not over a cap', async function () {
    const three = buildPack([
      { type: 'blob', data: plan },
      { type: 'blob', data: plan },
      { type: 'blob', data: plan },
    ]);
    await assert.rejects(readPack(three, limits({ maxObjects: 2 })), {
      overCap: true,
      message: 'the pack holds 3 objects, over the cap of 2 objects on one fetch',
    });
    // Declares 10 bytes, inflates to more: never inflated past what it declared.
    await assert.rejects(
      readPack(buildPack([{ type: 'blob', data: big.subarray(0, 100_000), declared: 10 }]), limits()),
      { overCap: false, message: /does not inflate to the 10 bytes its header says/ },
    );
    await assert.rejects(readPack(buildPack([{ type: 'blob', data: big, declared: 10_000_000 }]), limits()), {
      overCap: false,
      message: /does not inflate to the 10000000 bytes/,
    });
    const corrupt = Buffer.from(three);
    corrupt[20] = (corrupt[20] as number) ^ 1;
    await assert.rejects(readPack(corrupt, limits()), {
      overCap: false,
      message: 'the pack is corrupt (its checksum does not match)',
    });
    // A delta whose base is itself: no object before it.
    const selfBase = buildPack([
      { type: 'blob', data: plan },
      { type: 'ofs-delta', data: appendDelta(plan, 'x'), base: 1 },
    ]);
    await assert.rejects(readPack(selfBase, limits()), {
      overCap: false,
      message: /whose base is not an object before it/,
    });
    await assert.rejects(readPack(Buffer.from('not a pack at all, really not a pack'), limits()), {
      overCap: false,
      message: 'the server sent no valid pack (no PACK header)',
    });
  });
});

describe('gitops/source: the upload-pack exchange', function () {
  const OID = 'a'.repeat(40);

  it('finds the branch in the ref advertisement, with the capabilities of its first line', function () {
    const body = Buffer.concat([
      pktLine('# service=git-upload-pack\n'),
      Buffer.from('0000'),
      pktLine(`${'b'.repeat(40)} HEAD\0multi_ack shallow side-band-64k ofs-delta symref=HEAD:refs/heads/main\n`),
      pktLine(`${OID} refs/heads/main\n`),
      pktLine(`${'c'.repeat(40)} refs/heads/mainline\n`),
      Buffer.from('0000'),
    ]);
    const adv = parseAdvertisement(body, 'main');
    assert.equal(adv.head, OID);
    assert.ok(adv.capabilities.has('shallow') && adv.capabilities.has('side-band-64k'));
    assert.equal(parseAdvertisement(body, 'other').head, undefined);
  });

  it('asks for one commit at depth 1 without progress, and refuses a server without shallow fetches', function () {
    const req = uploadPackRequest(OID, new Set(['shallow', 'side-band-64k', 'ofs-delta']));
    assert.equal(
      req.toString(),
      `0071want ${OID} side-band-64k shallow no-progress agent=kangal-patch ofs-delta\n000ddeepen 1\n00000009done\n`,
    );
    assert.throws(() => uploadPackRequest(OID, new Set(['side-band-64k'])), {
      message: 'the git server does not offer "shallow", which a shallow fetch needs',
    });
  });

  it("takes the pack from side-band 1 across chunk boundaries, drops progress, and reports the server's error", function () {
    const band = (n: number, data: string): Buffer =>
      Buffer.concat([
        Buffer.from((Buffer.byteLength(data) + 5).toString(16).padStart(4, '0')),
        Buffer.from([n]),
        Buffer.from(data),
      ]);
    const answer = Buffer.concat([
      pktLine(`shallow ${OID}\n`),
      Buffer.from('0000'),
      pktLine('NAK\n'),
      band(2, 'Counting objects'),
      band(1, 'PACK-part-1'),
      band(1, '-part-2'),
      Buffer.from('0000'),
    ]);
    const r = new UploadPackResponse();
    for (let i = 0; i < answer.byteLength; i += 3) r.push(answer.subarray(i, i + 3));
    assert.equal(r.pack().toString(), 'PACK-part-1-part-2');
    const failing = new UploadPackResponse();
    assert.throws(
      () => failing.push(Buffer.concat([pktLine('NAK\n'), band(3, 'upload-pack: not our ref')])),
      (err: unknown) => err instanceof UploadPackError && /not our ref/.test(err.message),
    );
    const cut = new UploadPackResponse();
    cut.push(Buffer.concat([pktLine('NAK\n'), band(1, 'PACK')]));
    assert.throws(() => cut.pack(), { message: 'the git server ended the answer before the pack was complete' });
    assert.throws(() => new UploadPackResponse().push(pktLine('ERR access denied\n')), {
      message: 'the git server refused the fetch: access denied',
    });
  });
});
