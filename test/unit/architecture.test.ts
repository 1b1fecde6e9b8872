// Arrows point down: every relative import of controller/ and schemas/ goes from a room to a room
// below it (or within itself), core's sub-rooms likewise, no file import cycle, schemas/ and the lab
// (test/lab/) import nothing from controller/, core/ does no I/O and reads no clock, and each adapter
// library is imported only by the room that owns it. docs/architecture.md describes the rooms.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { sourceFiles } from '../support/source-files.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

// The rooms, bottom first: a file may import from its own room and from rooms listed before it.
// A room is the first directory under controller/; files directly in controller/ are `(root)`.
const ROOMS = [
  'schemas', // schemas/: the API's zod schemas, the one source of types, CRDs, JSON Schema and chart values
  'core', // the functional core: pure decisions (plan, job, gates, etcd, reports, promotion); time is an argument
  'runtime', // process plumbing without domain: the clock, operation context, work queue, leader election, informer cache, outcome kinds
  'kube', // the Kubernetes adapter: the only importer of @kubernetes/client-node, views and the KubePort
  'proto', // proto/gen/: the Talos API messages generated from proto/, read by the Talos adapter only
  'talos', // the Talos adapter: the only code that speaks gRPC to Talos, behind the TalosPort; sessions from the credentials Secret, the etcd reader
  'registry', // the OCI distribution client: does an installer image exist in its registry or mirror
  'alertmanager', // Alertmanager's API v2: firing alerts for the alert gate, silences for disrupted nodes
  'telemetry', // structured logs, Prometheus metrics, /healthz, /readyz and /metrics
  'health-checks', // health checks: CEL expressions and the watches of the objects they read
  'forge', // the forge port: pull requests and commit statuses (GitHub, Gitea, none), the Talos releases feed
  'notify', // notification delivery: the receivers' config file and the bounded queue that sends to them
  'rollout', // the PatchPlan and PatchJob reconcilers: observe, decide with core, act through the adapters (the preflight through a port the composition root wires)
  'preflight', // a plan's preflight checks, run before its first PatchJob (the plan reconciler calls it through a port)
  'preview', // `kangal-patch preview`: the rollout computed on the live cluster, read-only
  'gitops', // plans from Git (loader, sync), reports and auto-update proposals back to Git as pull requests
  'status', // `kangal-patch status`: plans, jobs and nodes listed and watched with the viewer's credentials, drawn by core/status-view
  '(root)', // main.ts (the composition root of `kangal-patch run`), cli.ts, config.ts
] as const;

// The sub-rooms of controller/core/, bottom first: each subfolder, and each file directly in core/.
// core as a whole sits below runtime: it imports only schemas/ and itself.
const CORE_ROOMS = [
  'time.ts', // RFC 3339 times and Go durations
  'names.ts', // a few names in a message, the rest counted; object names shortened with a hash, child plan names
  'markdown.ts', // text from outside made inert in Markdown
  'same-value.ts', // structural equality of JSON-like values
  'conditions.ts', // metav1.Condition lists
  'selector.ts', // LabelSelector matching
  'windows.ts', // maintenance windows
  'support-matrix.ts', // the Talos ↔ Kubernetes support matrix and upgrade-path rules
  'paths/', // upgrade paths: every Talos and Kubernetes hop to a destination, each within the support matrix
  'installer.ts', // installer image names
  'talos-flow.ts', // the Talos upgrade flow of a version, gRPC status classes, backoff
  'kubernetes/', // Kubernetes component images, their place in the machine config, version skew
  'hook-policy.ts', // what a plan's hook may be given against what the operator allows
  'etcd/', // etcd-safe control-plane rollouts
  'gates/', // the health-check and alert gate decisions
  'hooks.ts', // running one hook Job, for node hooks and plan hooks
  'plan/', // the PatchPlan decision
  'job/', // the PatchJob decision
  'preview.ts', // what a plan would do on the cluster as it is now
  'report/', // the rollout report and when it gets a commit
  'notify/', // which notifications a status change means, and long waits
  'gitops/', // what a GitOps sync does, bot branches, source status
  'promotion/', // promotion across clusters: what upstream stages prove, the signed report index
  'auto-update/', // the auto-update decision of a template plan
  'status-view/', // what `kangal-patch status` shows of plans, jobs and nodes: the stable document, text and wide lines
] as const;

/** Repository-relative path with forward slashes. */
const rel = (abs: string): string => relative(repo, abs).split(sep).join('/');

/** Relative module specifiers of a file: static, type-only, re-exports, side-effect and dynamic import(). */
function relativeSpecifiers(text: string): string[] {
  const found = ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
  // preProcessFile does not report `export * as ns from '...'`.
  for (const m of text.matchAll(/\bexport\s*\*\s*as\s+[\w$]+\s+from\s*(['"])([^'"]+)\1/g))
    if (m[2] !== undefined) found.push(m[2]);
  return found.filter((s) => s.startsWith('.'));
}

/** The file a relative specifier names (`.js` names the `.ts` source), or undefined. */
function resolveSpecifier(from: string, spec: string): string | undefined {
  const target = resolve(repo, dirname(from), spec);
  const candidates = spec.endsWith('.js') ? [target.slice(0, -3) + '.ts', target] : [target];
  const hit = candidates.find((c) => existsSync(c) && statSync(c).isFile());
  return hit === undefined ? undefined : rel(hit);
}

interface Edge {
  from: string;
  to: string;
}

function scan(dirs: readonly string[]): { files: string[]; edges: Edge[]; unresolved: string[] } {
  const files = dirs
    .flatMap((d) => sourceFiles(join(repo, d)))
    .map(rel)
    .filter((f) => f.endsWith('.ts'))
    .sort();
  const edges: Edge[] = [];
  const unresolved: string[] = [];
  for (const from of files) {
    for (const spec of relativeSpecifiers(readFileSync(join(repo, from), 'utf8'))) {
      const to = resolveSpecifier(from, spec);
      if (to === undefined) unresolved.push(`${from} imports ${spec}, which names no file`);
      else edges.push({ from, to });
    }
  }
  return { files, edges, unresolved };
}

const { files, edges, unresolved } = scan(['controller', 'schemas', join('test', 'lab')]);
const key = (e: Edge): string => `${e.from} -> ${e.to}`;
const inProduct = (f: string): boolean => f.startsWith('controller/') || f.startsWith('schemas/');

/** The room of a file, or undefined outside controller/, schemas/ and proto/gen/. */
function roomOf(file: string): string | undefined {
  if (file.startsWith('schemas/')) return 'schemas';
  if (file.startsWith('proto/gen/')) return 'proto';
  const parts = file.split('/');
  if (parts[0] !== 'controller') return undefined;
  return parts.length === 2 ? '(root)' : parts[1];
}

/** The sub-room of a file under controller/core/, or undefined elsewhere. */
function coreRoomOf(file: string): string | undefined {
  const parts = file.split('/');
  if (parts[0] !== 'controller' || parts[1] !== 'core') return undefined;
  return parts.length === 3 ? parts[2] : `${parts[2]}/`;
}

/** Imports that go up an ordered list of rooms, each as a message naming both files and rooms. */
function upward(order: readonly string[], room: (f: string) => string | undefined, label: string): Map<string, string> {
  const rank = new Map(order.map((r, i) => [r, i]));
  const out = new Map<string, string>();
  for (const e of edges.filter((x) => inProduct(x.from))) {
    const [a, b] = [room(e.from), room(e.to)];
    if (a === undefined || b === undefined || a === b) continue;
    const [ra, rb] = [rank.get(a), rank.get(b)];
    if (ra === undefined || rb === undefined)
      out.set(key(e), `${e.from} (${label} ${a}) imports ${e.to} (${label} ${b}), and one of them is not listed`);
    else if (rb > ra) out.set(key(e), `${e.from} (${label} ${a}) imports ${e.to} (${label} ${b}), a ${label} above it`);
  }
  return out;
}

/** Strongly connected components of the import graph among `nodes` (Tarjan), those with a cycle. */
function cycles(nodes: readonly string[], graph: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>(nodes.map((n) => [n, []]));
  for (const e of graph) if (next.has(e.from) && next.has(e.to)) next.get(e.from)?.push(e.to);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) ?? 0);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) === index.get(v)) pop(v);
  };
  // v is the root of a component: its members are on the stack down to v.
  const pop = (v: string): void => {
    const scc: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = w === v ? undefined : stack.pop()) {
      onStack.delete(w);
      scc.push(w);
    }
    if (scc.length > 1 || (next.get(v) ?? []).includes(v)) found.push(scc);
  };
  for (const n of nodes) if (!index.has(n)) visit(n);
  return found;
}

/** A shortest cycle through the first file of a component, in import order: a -> b -> ... -> a. */
function cycleThrough(scc: readonly string[], graph: readonly Edge[]): string[] {
  const members = new Set(scc);
  const start = [...scc].sort()[0] ?? '';
  const from = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i] ?? '';
    for (const e of graph) {
      if (e.from !== v || !members.has(e.to)) continue;
      if (e.to === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(from.get(path[0] ?? '') ?? start);
        return [...path, start];
      }
      if (!from.has(e.to)) {
        from.set(e.to, v);
        queue.push(e.to);
      }
    }
  }
  return [...scc];
}

/** Bare (package) specifiers of a file: `@scope/name` or `name`, without the subpath. */
function packagesImported(text: string): string[] {
  return ts
    .preProcessFile(text, true, true)
    .importedFiles.map((f) => f.fileName)
    .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
    .map((s) =>
      s
        .split('/')
        .slice(0, s.startsWith('@') ? 2 : 1)
        .join('/'),
    );
}

// Libraries that belong to one adapter: the rest of the program reaches them through that room's port,
// so a library's types and failure modes stay in one place. General-purpose libraries (zod, yaml,
// semver, luxon) may be imported anywhere.
const LIBRARY_OWNERS: Readonly<Record<string, string>> = {
  '@kubernetes/client-node': 'kube',
  undici: 'kube',
  '@grpc/grpc-js': 'talos',
  'isomorphic-git': 'gitops',
  '@octokit/rest': 'forge',
  '@octokit/plugin-retry': 'forge',
  '@octokit/plugin-throttling': 'forge',
  'prom-client': 'telemetry',
  pino: 'telemetry',
  '@bufbuild/cel': 'health-checks',
  commander: '(root)',
};

// What makes a function impure: the clock, randomness, timers, the process, the network.
const CORE_IMPURE = [
  /\bDate\.now\s*\(/,
  /\bnew Date\s*\(\s*\)/,
  /\bperformance\.now\s*\(/,
  /\bMath\.random\s*\(/,
  /\bset(?:Timeout|Interval|Immediate)\s*\(/,
  /\bprocess\./,
  /\bfetch\s*\(/,
];

describe('architecture: arrows point down', () => {
  it('finds the import forms it scans for, and resolves every relative import to a file', () => {
    const sample = [
      "import { a } from './a.js';",
      "import type { B } from './b.js';",
      "export { c } from './c.js';",
      "export * from './d.js';",
      "export * as e from './e.js';",
      "import './f.js';",
      "const g = await import('./g.js');",
      "import {\n  h,\n} from '../h.js';",
      "import { z } from 'zod';",
    ].join('\n');
    assert.deepEqual(relativeSpecifiers(sample).sort(), [
      '../h.js',
      './a.js',
      './b.js',
      './c.js',
      './d.js',
      './e.js',
      './f.js',
      './g.js',
    ]);
    assert.ok(files.length > 200, `scanned ${files.length} files`);
    assert.deepEqual(unresolved, []);
  });

  it('schemas/ imports nothing from controller/ or test/', () => {
    const offenders = edges
      .filter((e) => e.from.startsWith('schemas/') && /^(?:controller|test)\//.test(e.to))
      .map(key);
    assert.deepEqual(offenders, []);
  });

  it('the lab (test/lab/) imports nothing from controller/', () => {
    const offenders = edges.filter((e) => e.from.startsWith('test/lab/') && e.to.startsWith('controller/')).map(key);
    assert.deepEqual(offenders, []);
  });

  it('no import cycle among the files of controller/ and schemas/', () => {
    const graph = edges.filter((e) => inProduct(e.from) && inProduct(e.to));
    const found = cycles(files.filter(inProduct), graph).map(
      (scc) =>
        `${cycleThrough(scc, graph).join(' -> ')} (${scc.length} ${scc.length === 1 ? 'file' : 'files'} in the cycle)`,
    );
    assert.deepEqual(found, [], `import cycles:\n${found.join('\n')}`);
  });

  it('every file of controller/ and schemas/ belongs to a listed room, and every listed room has files', () => {
    const rooms = new Set(files.filter(inProduct).map(roomOf));
    const unlisted = [...rooms].filter((r) => r === undefined || !(ROOMS as readonly string[]).includes(r));
    assert.deepEqual(unlisted, [], 'add the new room to ROOMS at its place, bottom first');
    const empty = ROOMS.filter((r) => r !== 'proto' && !rooms.has(r));
    assert.deepEqual(empty, [], 'remove rooms that have no files from ROOMS');
    const coreRooms = new Set(files.map(coreRoomOf).filter((r) => r !== undefined));
    assert.deepEqual(
      [...coreRooms].filter((r) => !(CORE_ROOMS as readonly string[]).includes(r)),
      [],
      'add the new core sub-room to CORE_ROOMS at its place, bottom first',
    );
    assert.deepEqual(
      CORE_ROOMS.filter((r) => !coreRooms.has(r)),
      [],
      'remove core sub-rooms that have no files from CORE_ROOMS',
    );
  });

  it('every import of controller/ and schemas/ goes to its own room or a room below it, and core imports only schemas/', () => {
    const targets = edges.filter((e) => inProduct(e.from) && roomOf(e.to) === undefined).map(key);
    assert.deepEqual(targets, [], 'imports outside controller/, schemas/ and proto/gen/');
    const offenders = [...upward(ROOMS, roomOf, 'room').values()];
    assert.deepEqual(offenders, [], `imports pointing up:\n${offenders.join('\n')}`);
  });

  it('inside controller/core/, every import goes to its own sub-room or one below it', () => {
    const offenders = [...upward(CORE_ROOMS, coreRoomOf, 'core sub-room').values()];
    assert.deepEqual(offenders, [], `imports pointing up:\n${offenders.join('\n')}`);
  });
  it('controller/core/ does no I/O and reads no clock: no node: module, timer, process, fetch, Date.now or new Date()', () => {
    const offenders = files
      .filter((f) => f.startsWith('controller/core/'))
      .flatMap((f) => {
        const text = readFileSync(join(repo, f), 'utf8');
        const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
        const builtins = ts
          .preProcessFile(text, true, true)
          .importedFiles.map((i) => i.fileName)
          .filter((s) => s.startsWith('node:'))
          .map((s) => `${f} imports ${s}`);
        const impure = CORE_IMPURE.filter((re) => re.test(code)).map((re) => `${f} uses ${re.source}`);
        return [...builtins, ...impure];
      });
    assert.deepEqual(offenders, [], 'core takes time and I/O results as arguments');
  });

  it('each adapter library is imported only in the room that owns it', () => {
    const offenders = files.filter(inProduct).flatMap((f) =>
      packagesImported(readFileSync(join(repo, f), 'utf8'))
        .filter((lib) => LIBRARY_OWNERS[lib] !== undefined && LIBRARY_OWNERS[lib] !== roomOf(f))
        .map((lib) => `${f} (room ${roomOf(f) ?? '?'}) imports ${lib}, which belongs to ${LIBRARY_OWNERS[lib] ?? '?'}`),
    );
    assert.deepEqual(offenders, []);
    const known = new Set(
      files.filter(inProduct).flatMap((f) => packagesImported(readFileSync(join(repo, f), 'utf8'))),
    );
    const unused = Object.keys(LIBRARY_OWNERS).filter((lib) => !known.has(lib));
    assert.deepEqual(unused, [], 'remove libraries no file imports any more from LIBRARY_OWNERS');
  });
});
