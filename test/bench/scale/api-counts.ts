// Pure helpers of the scale benches: what a request to the apiserver was (verb and resource, the
// way apiserver_request_total labels it), which writes changed nothing, and counter diffs of a
// Prometheus text scrape.

/** `verb resource[/subresource]` with apiserver_request_total's verbs, e.g. `LIST pods`, `PATCH patchjobs.kangalpatch.ozalp.dk/status`, `POST pods/eviction`. */
export function requestKind(method: string, pathAndQuery: string): string {
  const [path = '', query = ''] = pathAndQuery.split('?', 2);
  const segs = path.split('/').filter((s) => s !== '');
  // /api/v1/... (core) or /apis/<group>/<version>/...
  const core = segs[0] === 'api';
  const group = core ? '' : (segs[1] ?? '');
  const rest = segs.slice(core ? 2 : 3);
  if (segs[0] !== 'api' && segs[0] !== 'apis') return `${method} ${path}`;
  const [resource, name, sub] = resourceParts(rest);
  const qualified = group === '' ? resource : `${resource}.${group}`;
  const what = sub ? `${qualified}/${sub}` : qualified;
  const watch = /(^|&)watch=(true|1)(&|$)/.test(query);
  const verb = ((): string => {
    switch (method) {
      case 'GET':
        return watch ? 'WATCH' : name === undefined ? 'LIST' : 'GET';
      case 'DELETE':
        return name === undefined ? 'DELETECOLLECTION' : 'DELETE';
      default:
        return method;
    }
  })();
  return `${verb} ${what}`;
}

/** Resource, name and subresource of an API path after its group and version (`namespaces/<ns>/` skipped). */
function resourceParts(rest: string[]): [resource: string, name: string | undefined, sub: string | undefined] {
  const namespaced = rest[0] === 'namespaces' && rest.length >= 3;
  const [resource = '', name, sub] = namespaced ? rest.slice(2) : rest;
  return [resource, name, sub];
}

/** Counts by key, sorted by key. */
export function tally<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(keyOf(item), (counts.get(keyOf(item)) ?? 0) + 1);
  return new Map([...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export interface WriteRecord {
  method: string;
  path: string;
  status: number;
  resourceVersion?: string;
  seenBefore?: number;
  deletedByWrite?: boolean;
}

/**
 * Updates and patches answered 2xx that changed nothing: the apiserver answers such a write with
 * the object's old resourceVersion, which is at or below the highest one any earlier write had
 * returned when it arrived; a write that changed the object gets a new etcd revision above every
 * earlier one. (A no-op on an object whose last change no recorded write returned goes unseen.)
 * A write that removed an object's last finalizer deleted it, and is answered with the object as it
 * was before (its old resourceVersion): a change, not counted.
 */
export function noOpWrites<T extends WriteRecord>(writes: readonly T[]): T[] {
  return writes.filter(
    (w) =>
      (w.method === 'PATCH' || w.method === 'PUT') &&
      w.status < 300 &&
      w.seenBefore !== undefined &&
      w.deletedByWrite !== true &&
      w.resourceVersion !== undefined &&
      /^\d+$/.test(w.resourceVersion) &&
      Number(w.resourceVersion) <= w.seenBefore,
  );
}

/** Samples of one counter family in a Prometheus text scrape: label set (as written) → value. */
export function counterSamples(text: string, metric: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`) && !line.startsWith(`${metric} `)) continue;
    const m = /^[^{\s]+(\{.*\})?\s+(\S+)/.exec(line);
    if (m) samples.set(m[1] ?? '', Number(m[2]));
  }
  return samples;
}

/** after − before per label set, without the ones that did not move. */
export function counterDiff(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const diff = new Map<string, number>();
  for (const [labels, value] of after) {
    const d = value - (before.get(labels) ?? 0);
    if (d !== 0) diff.set(labels, d);
  }
  return diff;
}

/** One label's value from a label set such as `{code="200",verb="GET"}`. */
export function label(labels: string, name: string): string {
  return new RegExp(`[{,]${name}="([^"]*)"`).exec(labels)?.[1] ?? '';
}

/** apiserver_request_total samples as `VERB resource[.group][/subresource]` (requestKind's keys) → count. */
export function apiserverRequests(diff: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [labels, n] of diff) {
    const group = label(labels, 'group');
    const resource = label(labels, 'resource');
    const sub = label(labels, 'subresource');
    const key = `${label(labels, 'verb')} ${group === '' ? resource : `${resource}.${group}`}${sub ? `/${sub}` : ''}`;
    out.set(key, (out.get(key) ?? 0) + n);
  }
  return new Map([...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
