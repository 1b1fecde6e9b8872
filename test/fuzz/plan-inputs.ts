// Hostile plan files for the loader fuzzer (fast-check): documents generated from the plan
// vocabulary, structure-aware mutations of the examples (wrong types, huge strings and lists, deep
// nesting, unknown and prototype-named keys, odd Unicode), YAML token soup, and text/byte damage on
// top (BOMs, CRLF, duplicate keys, alias bombs, tags, merge keys, truncation, invalid UTF-8, NUL).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { parseAllDocuments, stringify } from 'yaml';

export interface FuzzInput {
  /** How the input was made, for the report of a failing case. */
  kind: string;
  bytes: Uint8Array;
}

/** The example plans (examples/*.yaml and the sample plans repository), parsed. */
export function loadExampleCorpus(root = 'examples'): unknown[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (/\.ya?ml$/.test(e.name)) files.push(join(dir, e.name));
    }
  };
  walk(root);
  const docs: unknown[] = [];
  for (const f of files.sort()) {
    for (const d of parseAllDocuments(readFileSync(f, 'utf8'))) {
      const v: unknown = d.toJS();
      if (v !== null && typeof v === 'object') docs.push(v);
    }
  }
  return docs;
}

function keysOf(v: unknown, out: Set<string>): Set<string> {
  if (Array.isArray(v)) for (const x of v) keysOf(x, out);
  else if (v !== null && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      out.add(k);
      keysOf(x, out);
    }
  }
  return out;
}

/** Inputs stop here: well past the loader's 64 KiB cap, small enough for 100,000 of them. */
const MAX_INPUT = 256 * 1024;
const capped = (text: string): string => (text.length > MAX_INPUT ? text.slice(0, MAX_INPUT) : text);

const ODD_STRINGS = [
  '',
  ' ',
  '\u202e',
  '\u200b',
  '\ufeff',
  '\u0085',
  '\u2028',
  'é',
  'e\u0301',
  '🐐',
  '\ud800',
  '\udfff',
  'ﬃ',
  'İ',
  '\t',
  '\r',
  '\\',
  '"',
  "'",
  '#',
  ': ',
  '- ',
  '&a',
  '*a',
  '!!str',
  '<<',
  '~',
  'null',
  'NaN',
  '.inf',
  'yes',
  'on',
  '0x1F',
  '0o17',
  '1_000',
  '1.10',
  'v1.12.1',
  'v1.12',
  'v999999999999999999.0.0',
  'v1.2.3-alpha.1+meta',
  'latest',
  '5m',
  '-5m',
  '99999999999h',
  '1e3s',
  '0s',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
];
const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'valueOf', 'hasOwnProperty'];

function nested(depth: number, map: boolean): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = map ? { k: v } : [v];
  return v;
}

const arbOddString = fc.oneof(
  fc.constantFrom(...ODD_STRINGS),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.array(fc.constantFrom(...ODD_STRINGS), { maxLength: 6 }).map((a) => a.join('')),
);

/** Values a field should never hold: wrong types, extremes, huge and deep ones. */
const arbHostileValue: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      null,
      true,
      false,
      0,
      -1,
      1.5,
      2 ** 53 + 1,
      1e308,
      -1e308,
      Number.NaN,
      Infinity,
      -Infinity,
      -0,
    ),
  },
  { weight: 2, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double() },
  { weight: 4, arbitrary: arbOddString },
  // Sizes spread log-uniformly: most are modest, some pass the 64 KiB cap.
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 9, max: 17 })
      .chain((b) => fc.constantFrom('x', 'é', '🐐', 'a b').map((c) => c.repeat(2 ** b))),
  },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 5, max: 13 })
      .chain((b) => fc.constantFrom(1, 'a', null, {}).map((x) => Array.from({ length: 2 ** b }, () => x))),
  },
  { weight: 1, arbitrary: fc.integer({ min: 5, max: 90 }).chain((d) => fc.boolean().map((m) => nested(d, m))) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 1,
    arbitrary: fc.dictionary(fc.constantFrom(...PROTO_KEYS, 'name', 'x'), fc.jsonValue({ maxDepth: 1 }), {
      maxKeys: 4,
    }),
  },
);

type Path = (string | number)[];

function containers(v: unknown, path: Path, out: { path: Path; value: unknown }[]): void {
  out.push({ path, value: v });
  if (Array.isArray(v)) v.forEach((x, i) => containers(x, [...path, i], out));
  else if (v !== null && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) containers(x, [...path, k], out);
}

const arbOp = fc.record({
  pick: fc.nat(),
  op: fc.constantFrom('replace', 'replace', 'replace', 'delete', 'addKey', 'renameKey', 'wrap'),
  value: arbHostileValue,
  key: fc.oneof(arbOddString, fc.constantFrom(...PROTO_KEYS)),
});
type Op = typeof arbOp extends fc.Arbitrary<infer T> ? T : never;

/** Applies one structural mutation to a deep copy of `doc` (positions chosen modulo the node count). */
function mutate(doc: unknown, op: Op): unknown {
  const root: unknown = structuredClone(doc);
  const all: { path: Path; value: unknown }[] = [];
  containers(root, [], all);
  const target = all[op.pick % all.length];
  if (!target || target.path.length === 0) return op.op === 'replace' ? op.value : root;
  const parent = target.path
    .slice(0, -1)
    .reduce<unknown>((v, k) => (v as Record<string | number, unknown>)[k], root) as Record<string | number, unknown>;
  const last = target.path[target.path.length - 1] as string | number;
  switch (op.op) {
    case 'replace':
      parent[last] = op.value;
      break;
    case 'delete':
      if (Array.isArray(parent)) parent.splice(last as number, 1);
      else delete parent[last];
      break;
    case 'addKey':
      if (!Array.isArray(parent))
        Object.defineProperty(parent, op.key, {
          value: op.value,
          enumerable: true,
          configurable: true,
          writable: true,
        });
      break;
    case 'renameKey':
      if (!Array.isArray(parent)) {
        const v = parent[last];
        delete parent[last];
        Object.defineProperty(parent, op.key, { value: v, enumerable: true, configurable: true, writable: true });
      }
      break;
    case 'wrap':
      parent[last] = [parent[last]];
      break;
  }
  return root;
}

/** Serialises a value as the YAML a person (block style) or a tool (JSON, flow) would write. */
function serialize(v: unknown, style: 'block' | 'flow' | 'json'): string {
  if (style === 'json') return `${JSON.stringify(v, null, 1) ?? 'null'}\n`;
  return stringify(v, {
    lineWidth: 0,
    aliasDuplicateObjects: false,
    collectionStyle: style === 'flow' ? 'flow' : 'any',
  });
}

function aliasBomb(width: number, depth: number): string {
  const lines = [`l0: &l0 [${Array.from({ length: width }, () => '"lol"').join(', ')}]`];
  for (let i = 1; i <= depth; i++)
    lines.push(`l${i}: &l${i} [${Array.from({ length: width }, () => `*l${i - 1}`).join(', ')}]`);
  return `${lines.join('\n')}\n`;
}

const arbTextOp = fc.oneof(
  fc.constant({ t: 'bom' as const }),
  fc.constant({ t: 'crlf' as const }),
  fc.constant({ t: 'cr' as const }),
  fc.record({ t: fc.constant('dupLine' as const), at: fc.nat() }),
  fc.record({
    t: fc.constant('bomb' as const),
    width: fc.integer({ min: 2, max: 10 }),
    depth: fc.integer({ min: 1, max: 9 }),
    top: fc.boolean(),
  }),
  fc.record({ t: fc.constant('selfAlias' as const), at: fc.nat() }),
  fc.record({
    t: fc.constant('insert' as const),
    at: fc.nat(),
    text: fc.constantFrom(
      '\t',
      '!!binary ',
      '!foo ',
      '<<: *x\n',
      '&x ',
      '*x',
      '%YAML 1.1\n---\n',
      '---\n',
      '...\n',
      '? ',
      '|\n',
      '"',
      "'",
      '[',
      '{',
      '\u0000',
      '\ufeff',
      '\r',
    ),
  }),
  fc.record({ t: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ t: fc.constant('manyDocs' as const), n: fc.integer({ min: 2, max: 200 }) }),
);
type TextOp = typeof arbTextOp extends fc.Arbitrary<infer T> ? T : never;

function applyText(text: string, op: TextOp): string {
  const lines = text.split('\n');
  const pos = (n: number) => (text.length === 0 ? 0 : n % text.length);
  switch (op.t) {
    case 'bom':
      return `\ufeff${text}`;
    case 'crlf':
      return text.replace(/\n/g, '\r\n');
    case 'cr':
      return text.replace(/\n/g, '\r');
    case 'dupLine': {
      const i = op.at % lines.length;
      lines.splice(i, 0, lines[i] ?? '');
      return lines.join('\n');
    }
    case 'bomb':
      return op.top ? `${aliasBomb(op.width, op.depth)}${text}` : `${text}\n${aliasBomb(op.width, op.depth)}`;
    case 'selfAlias': {
      // An anchor on a collection that contains an alias to itself: a cycle once converted to JS.
      const i = op.at % lines.length;
      lines.splice(i, 0, 'loop: &loop [1, *loop]');
      return lines.join('\n');
    }
    case 'insert':
      return text.slice(0, pos(op.at)) + op.text + text.slice(pos(op.at));
    case 'truncate':
      return text.slice(0, pos(op.at));
    case 'manyDocs':
      return Array.from({ length: Math.min(op.n, Math.ceil(MAX_INPUT / (text.length + 5))) }, () => text).join(
        '\n---\n',
      );
  }
}

const arbByteOp = fc.oneof(
  fc.record({ b: fc.constant('flip' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ b: fc.constant('insert' as const), at: fc.nat(), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) }),
  fc.record({ b: fc.constant('latin1' as const) }),
  fc.record({ b: fc.constant('utf16' as const) }),
);
type ByteOp = typeof arbByteOp extends fc.Arbitrary<infer T> ? T : never;

function applyBytes(bytes: Uint8Array, op: ByteOp, text: string): Uint8Array {
  const at = bytes.length === 0 ? 0 : 'at' in op ? op.at % bytes.length : 0;
  switch (op.b) {
    case 'flip': {
      const out = Uint8Array.from(bytes);
      if (out.length > 0) out[at] = op.value;
      return out;
    }
    case 'insert':
      return Uint8Array.from(Buffer.concat([bytes.subarray(0, at), op.bytes, bytes.subarray(at)]));
    case 'latin1':
      return Uint8Array.from(Buffer.from(text, 'latin1'));
    case 'utf16':
      return Uint8Array.from(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]));
  }
}

const encode = (s: string): Uint8Array => new TextEncoder().encode(s);

function damaged(kind: string, base: fc.Arbitrary<string>): fc.Arbitrary<FuzzInput> {
  return fc
    .record({
      text: base,
      textOps: fc.array(arbTextOp, { maxLength: 3 }),
      byteOps: fc.array(arbByteOp, { maxLength: 2 }),
    })
    .map(({ text, textOps, byteOps }) => {
      const t = textOps.reduce((acc, op) => capped(applyText(acc, op)), capped(text));
      const bytes = byteOps.reduce((b, op) => applyBytes(b, op, t), encode(t));
      const ops = [...textOps.map((o) => o.t), ...byteOps.map((o) => o.b)];
      return { kind: ops.length > 0 ? `${kind}+${ops.join('+')}` : kind, bytes };
    });
}

const YAML_TOKENS = [
  '[',
  ']',
  '{',
  '}',
  ', ',
  '- ',
  ': ',
  '? ',
  '&a ',
  '*a',
  '!!str ',
  '!!map ',
  '!t ',
  '|',
  '>-',
  '"',
  "'",
  '#',
  '\n',
  '  ',
  '\t',
  '---\n',
  '...\n',
  '%YAML 1.2\n',
  '%TAG ! tag:x,2000:\n',
  'apiVersion: kangalpatch.ozalp.dk/v1alpha1\n',
  'kind: PatchPlan\n',
  'metadata:\n  name: x\n',
  'spec:\n',
  '<<: ',
  '\\',
  '\ufeff',
  'null',
  '~',
];

/** Everything the fuzzer feeds the loader, by weight. */
export function arbPlanInput(corpus: readonly unknown[]): fc.Arbitrary<FuzzInput> {
  const vocabulary = [...keysOf(corpus, new Set<string>())].sort();
  const arbKey = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...vocabulary) },
    { weight: 1, arbitrary: arbOddString },
  );
  const { tree } = fc.letrec<{ tree: unknown }>((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      arbHostileValue,
      fc.array(tie('tree'), { maxLength: 4 }),
      fc.dictionary(arbKey, tie('tree'), { maxKeys: 5 }),
    ),
  }));
  const generated = fc
    .record({
      apiVersion: fc.constantFrom('kangalpatch.ozalp.dk/v1alpha1', 'kangalpatch.ozalp.dk/v1', 'v1', undefined, 1),
      kind: fc.constantFrom('PatchPlan', 'PatchJob', 'Secret', 'patchplan', undefined),
      metadata: fc.oneof(fc.record({ name: arbOddString }), tree),
      spec: tree,
    })
    .map((d) => Object.fromEntries(Object.entries(d).filter(([, v]) => v !== undefined)));
  const style = fc.constantFrom('block' as const, 'block' as const, 'flow' as const, 'json' as const);
  const fromExample = fc
    .record({ i: fc.nat(), ops: fc.array(arbOp, { minLength: 1, maxLength: 4 }), style })
    .map(({ i, ops, style }) => serialize(ops.reduce(mutate, corpus[i % corpus.length]), style));
  const fromGenerated = fc.record({ d: generated, style }).map(({ d, style }) => serialize(d, style));
  const untouchedExample = fc.nat().map((i) => serialize(corpus[i % corpus.length], 'block'));
  const soup = fc
    .array(fc.oneof(fc.constantFrom(...YAML_TOKENS), fc.string({ maxLength: 6 })), { maxLength: 300 })
    .map((a) => a.join(''));
  return fc.oneof(
    { weight: 5, arbitrary: damaged('example', fromExample) },
    { weight: 1, arbitrary: damaged('example-text', untouchedExample) },
    { weight: 3, arbitrary: damaged('generated', fromGenerated) },
    { weight: 2, arbitrary: damaged('soup', soup) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 2048 }).map((bytes) => ({ kind: 'bytes', bytes })) },
  );
}
