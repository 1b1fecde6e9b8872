// A list+watch informer that keeps projected views only. It replaces client-node's makeInformer,
// which stops for good on any error but 410 (and, since 2.0, its own idle timeout), swallows
// handler exceptions, and keeps the full objects in memory (typescript-notes §2.1–2.2).
//
// Loop: list (paged) → store views, emit every key → watch from the list's resourceVersion (with
// bookmarks) → on 410 Gone re-list; on an error or an early end, back off (capped exponential,
// jittered, on the injected Clock) and watch again from the last resourceVersion seen. Every
// `resyncMs` the handlers are told about every cached key again, as client-go's resync does: from
// the cache, not a re-list (a re-list of 50,000 pods every 5 minutes was the idle controller's
// biggest API cost once watches stopped restarting; a watch that went silent is the watchdog's).
//
// The watch is our own request (watch-stream.ts), not client-node's Watch: over the API clients'
// keep-alive connection pool, with `timeoutSeconds` randomized between 5 and 10 minutes like
// client-go's reflector, so the apiserver ends a quiet watch cleanly and its connection goes back
// to the pool. (client-node's Watch aborted a watch after 30 s without a byte: on a quiet resource
// two restarts per informer per minute, each on a new TLS connection.) A watchdog on the Clock
// aborts a watch silent for longer than its server timeout plus a margin: a dead connection,
// counted as a watch error with a warning.
//
// Malformed watches (a broken apiserver or something between us and it): a 410 answered to a watch
// started from a list we just made (a 410 storm) backs off before the next list, like client-go's
// reflector, instead of re-listing in a tight loop. A line that is not a watch event (not JSON, no
// known type, an object that is not an object, a line over 16 MiB) means events may have been lost:
// the watch ends with a warning quoting the line's start, and after a backoff the informer re-lists.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Clock } from '../runtime/clock.js';
import { rootContext } from '../runtime/context.js';
import type { Informer } from '../runtime/informer.js';
import { silentLog, type LogFn } from '../runtime/log.js';
import { kubeCall, type CallOptions } from './call.js';
import { poolConnections } from './clients.js';
import { isNewer } from './resource-version.js';
import { ViewStore } from './store.js';
import { streamWatch, type WatchLine } from './watch-stream.js';

interface ListQuery {
  labelSelector?: string;
  fieldSelector?: string;
  limit: number;
  _continue?: string;
}

export interface ListPage<T> {
  items: T[];
  resourceVersion: string;
  continue: string | undefined;
}

/** How to list and watch one resource. */
export interface InformerSource<T> {
  /** Collection path, watched with `?watch=true`, e.g. `/api/v1/nodes`. */
  watchPath: string;
  list(query: ListQuery, opts: CallOptions): Promise<ListPage<T>>;
}

export interface InformerOptions<T, V> {
  /** For logs: `nodes`, `pods`, ... */
  name: string;
  kubeConfig: KubeConfig;
  source: InformerSource<T>;
  /** Raw object (typed from a list, plain JSON from a watch) → view. Must not throw, but is guarded. */
  project: (obj: T) => V;
  key: (view: V) => string;
  resourceVersion: (view: V) => string;
  /** One secondary index, read with byIndex(). */
  index?: (view: V) => string | undefined;
  labelSelector?: string;
  fieldSelector?: string;
  clock: Clock;
  log?: LogFn;
  /** Full re-list interval; 0 disables. Default 5 min. */
  resyncMs?: number;
  backoff?: { initialMs?: number; maxMs?: number };
  /** Jitter source in [0, 1); injectable for tests. */
  random?: () => number;
  /** Items per list page. */
  pageSize?: number;
  /** Per-request timeout for list pages. */
  listTimeoutMs?: number;
  /**
   * Each watch asks the server to end it after timeoutSeconds = minSeconds × (1 + random), default
   * minSeconds 300 (5 to 10 min); a watch silent for its timeout plus watchdogMarginMs (default 30 s)
   * is aborted as dead. Small values are for tests.
   */
  watchTimeout?: { minSeconds?: number; watchdogMarginMs?: number };
}

export interface KubeInformer<V> extends Informer<V> {
  byIndex(value: string): V[];
  /** Counters for tests and metrics. */
  stats(): InformerStats;
}

interface InformerStats {
  lists: number;
  watches: number;
  watchErrors: number;
  gone: number;
  /** Watch lines that were not a watch event (not JSON, wrong shape, too long): each ended its watch and forced a re-list. */
  malformedEvents: number;
  handlerErrors: number;
  /** Times every cached key was told to the handlers again (resyncMs). */
  resyncs: number;
  /** resourceVersion the informer would watch from next ('' when a re-list is due). */
  resourceVersion: string;
}

type WatchEnd =
  | { kind: 'aborted' }
  | { kind: 'gone'; events: number }
  | { kind: 'malformed'; line: string }
  | { kind: 'ended'; healthy: boolean }
  | { kind: 'error'; err: unknown };

interface WatchEvent {
  type: string;
  object: unknown;
}

/** The watch ERROR event's object is a metav1.Status. */
interface StatusObject {
  code?: number;
  reason?: string;
  message?: string;
}

const DEFAULT_RESYNC_MS = 5 * 60_000;
/** client-go's reflector minWatchTimeout: each watch lasts between this and twice this. */
const DEFAULT_MIN_WATCH_TIMEOUT_S = 5 * 60;
const DEFAULT_WATCHDOG_MARGIN_MS = 30_000;

export function createInformer<T, V>(opts: InformerOptions<T, V>): KubeInformer<V> {
  return new ListWatchInformer(opts);
}

class ListWatchInformer<T, V> implements KubeInformer<V> {
  readonly synced: Promise<void>;
  private markSynced!: () => void;
  private hasSynced = false;
  private readonly store: ViewStore<V>;
  private readonly handlers: ((key: string, view: V | undefined, old: V | undefined) => void)[] = [];
  private readonly log: LogFn;
  private readonly random: () => number;
  private started = false;
  /** Where the next watch starts; '' means list first. */
  private rv = '';
  /** Objects our own deletes removed before their DELETED event came: key → the view and its version when deleted. */
  private readonly deletedByUs = new Map<string, V>();
  private currentWatch: AbortController | undefined;
  private readonly counters = {
    lists: 0,
    watches: 0,
    watchErrors: 0,
    gone: 0,
    malformedEvents: 0,
    handlerErrors: 0,
    resyncs: 0,
  };

  constructor(private readonly opts: InformerOptions<T, V>) {
    this.store = new ViewStore(opts.index);
    this.log = opts.log ?? silentLog;
    this.random = opts.random ?? Math.random;
    this.synced = new Promise((resolve) => (this.markSynced = resolve));
    // Watches go over the API clients' keep-alive pool (a no-op when makeClients did it already).
    poolConnections(opts.kubeConfig);
  }

  isSynced(): boolean {
    return this.hasSynced;
  }

  get(key: string): V | undefined {
    return this.store.get(key);
  }

  list(): V[] {
    return this.store.values();
  }

  byIndex(value: string): V[] {
    return this.store.byIndex(value);
  }

  onChange(handler: (key: string, view: V | undefined, old: V | undefined) => void): void {
    this.handlers.push(handler);
  }

  observeWrite(view: V): void {
    const key = this.opts.key(view);
    const written = this.opts.resourceVersion(view);
    const cached = this.store.get(key);
    // Newer than what we hold and than where the watch already is (past that point the watch has
    // delivered this write, or the delete that followed it). Opaque versions: keep the watch's.
    if (cached !== undefined && isNewer(written, this.opts.resourceVersion(cached)) !== true) return;
    if (this.rv !== '' && isNewer(written, this.rv) !== true) return;
    this.store.set(key, view);
  }

  observeDelete(key: string, resourceVersion: string): void {
    const cached = this.store.get(key);
    // Only the version we deleted: a newer one (recreated since) is not what the delete removed.
    if (cached === undefined || this.opts.resourceVersion(cached) !== resourceVersion) return;
    this.store.delete(key);
    this.deletedByUs.set(key, cached);
  }

  /** An event from before our own delete of this key (the watch behind it): it must not bring the object back. */
  private deletedSince(key: string, view: V): boolean {
    const gone = this.deletedByUs.get(key);
    if (gone === undefined) return false;
    if (isNewer(this.opts.resourceVersion(view), this.opts.resourceVersion(gone)) === true) {
      this.deletedByUs.delete(key);
      return false;
    }
    return true;
  }

  start(signal: AbortSignal): void {
    if (this.started) throw new Error(`informer ${this.opts.name} already started`);
    this.started = true;
    this.run(signal).catch((err: unknown) => this.log('error', `informer ${this.opts.name} loop failed`, { err }));
    const resyncMs = this.opts.resyncMs ?? DEFAULT_RESYNC_MS;
    if (resyncMs > 0) void this.synced.then(() => this.resync(resyncMs, signal));
  }

  /** Every key again, from the cache, every `ms` (each handler sees view === old: nothing changed). */
  private async resync(ms: number, signal: AbortSignal): Promise<void> {
    for (;;) {
      try {
        await this.opts.clock.sleep(ms, signal);
      } catch {
        return;
      }
      this.counters.resyncs++;
      for (const view of this.store.values()) this.emit(this.opts.key(view), view, view);
    }
  }

  breakWatch(opts: { relist?: boolean; reason?: string } = {}): void {
    // Events after the abort are dropped (the watch is settled), so nothing sets rv again before the list.
    if (opts.relist) this.rv = '';
    this.currentWatch?.abort(new Error(opts.reason ?? 'watch broken on request'));
  }

  stats(): InformerStats {
    return { ...this.counters, resourceVersion: this.rv };
  }

  private async run(signal: AbortSignal): Promise<void> {
    const initialMs = this.opts.backoff?.initialMs ?? 500;
    const maxMs = this.opts.backoff?.maxMs ?? 30_000;
    let failures = 0;
    while (!signal.aborted) {
      const step = await this.step(signal);
      if (step === 'stop') return;
      if (step === 'ok') {
        failures = 0;
        continue;
      }
      failures++;
      const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(failures - 1, 30));
      // Half fixed, half random: replicas and informers that failed together spread out.
      const delay = ceiling / 2 + (this.random() * ceiling) / 2;
      try {
        await this.opts.clock.sleep(delay, signal);
      } catch {
        return;
      }
    }
  }

  /** One list (when due) and one watch: `ok` to go on at once, `failed` to back off first. */
  private async step(signal: AbortSignal): Promise<'ok' | 'failed' | 'stop'> {
    const listed = this.rv === '';
    try {
      if (listed) await this.relist(signal);
    } catch (err) {
      if (signal.aborted) return 'stop';
      this.log('warn', `informer ${this.opts.name}: list failed, retrying`, { err: describe(err) });
      return 'failed';
    }
    const end = await this.watchOnce(signal);
    switch (end.kind) {
      case 'aborted':
        return 'stop';
      case 'gone': {
        this.counters.gone++;
        const watchedFrom = this.rv;
        this.rv = '';
        // Normal after a long watch (etcd compacted past it): re-list at once. From a list we just
        // made, with nothing delivered, the apiserver is answering 410 to everything: back off.
        if (!listed || end.events > 0) return 'ok';
        this.log(
          'warn',
          `informer ${this.opts.name}: the apiserver answered 410 Gone (resource version too old) to a watch from the list it just gave (resourceVersion ${watchedFrom}); re-listing after a backoff`,
          { gone: this.counters.gone },
        );
        return 'failed';
      }
      case 'malformed':
        this.counters.malformedEvents++;
        this.rv = '';
        this.log(
          'warn',
          `informer ${this.opts.name}: the apiserver's watch sent a line that is not a watch event (${end.line}); events may be lost, re-listing after a backoff — check what sits between the controller and the apiserver`,
        );
        return 'failed';
      case 'ended':
        return end.healthy ? 'ok' : 'failed';
      case 'error':
        this.counters.watchErrors++;
        this.log('warn', `informer ${this.opts.name}: watch failed, restarting`, { err: describe(end.err) });
        return 'failed';
    }
  }

  private async relist(signal: AbortSignal): Promise<void> {
    const { source, clock } = this.opts;
    const ctx = rootContext(clock, signal);
    const fresh = new Map<string, V>();
    let token: string | undefined;
    let rv: string;
    do {
      const query: ListQuery = { limit: this.opts.pageSize ?? 500 };
      if (this.opts.labelSelector) query.labelSelector = this.opts.labelSelector;
      if (this.opts.fieldSelector) query.fieldSelector = this.opts.fieldSelector;
      if (token) query._continue = token;
      const pageCtx = { ...ctx, deadline: clock.now() + (this.opts.listTimeoutMs ?? 60_000) };
      // An expired continue token (410) fails the list; the loop then starts a fresh one.
      const page = await kubeCall(pageCtx, `list ${this.opts.name}`, (o) => source.list(query, o));
      for (const obj of page.items) {
        const view = this.project(obj);
        if (view !== undefined) fresh.set(this.opts.key(view), view);
      }
      token = page.continue || undefined;
      rv = page.resourceVersion;
    } while (token);
    if (signal.aborted) return;
    this.counters.lists++;
    this.replaceAll(fresh, rv);
    this.rv = rv;
    if (!this.hasSynced) {
      this.hasSynced = true;
      this.markSynced();
    }
  }

  /**
   * Stores a full list, then tells handlers about every key (deleted ones too). A view our own write
   * put in (observeWrite) after the list's snapshot is newer than what the list says: it stays, as it
   * does against an older watch event, or a re-list would undo our cordon in the cache (and the next
   * pass would cordon again, a patch that changes nothing) until the write's own event arrives.
   */
  private replaceAll(fresh: Map<string, V>, listRv: string): void {
    const rvOf = this.opts.resourceVersion;
    const changes: [string, V | undefined, V | undefined][] = [];
    this.dropOurDeletes(fresh, listRv);
    for (const key of this.store.keys()) {
      const cached = this.store.get(key);
      if (!fresh.has(key) && cached !== undefined && isNewer(rvOf(cached), listRv) !== true)
        changes.push([key, undefined, this.store.delete(key)]);
    }
    for (const [key, view] of fresh) {
      const cached = this.store.get(key);
      const ours = cached !== undefined && isNewer(rvOf(cached), rvOf(view)) === true ? cached : view;
      changes.push([key, ours, this.store.set(key, ours)]);
    }
    for (const [key, view, old] of changes) this.emit(key, view, old);
  }

  /** Takes out of a full list the objects we deleted since (deletedByUs), as replaceAll must not bring them back. */
  private dropOurDeletes(fresh: Map<string, V>, listRv: string): void {
    const rvOf = this.opts.resourceVersion;
    for (const [key, gone] of this.deletedByUs) {
      if (fresh.has(key) && !this.deletedSince(key, fresh.get(key) as V)) continue;
      fresh.delete(key);
      // A list taken after the delete does not have it: nothing to remember (nor to tell handlers) any more.
      if (isNewer(listRv, rvOf(gone)) === true) this.deletedByUs.delete(key);
    }
  }

  private watchOnce(signal: AbortSignal): Promise<WatchEnd> {
    const session = new AbortController();
    this.currentWatch = session;
    this.counters.watches++;
    const started = this.opts.clock.now();
    let events = 0;
    return new Promise<WatchEnd>((resolve) => {
      let settled = false;
      const finish = (end: WatchEnd): void => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        session.abort();
        resolve(end);
      };
      const onAbort = (): void => finish({ kind: 'aborted' });
      if (signal.aborted) return finish({ kind: 'aborted' });
      signal.addEventListener('abort', onAbort, { once: true });
      session.signal.addEventListener('abort', () => finish({ kind: 'error', err: session.signal.reason }), {
        once: true,
      });

      // Like client-go's reflector: a server-side timeout between min and 2 × min, so informers
      // started together do not all re-watch at the same moment.
      const minSeconds = this.opts.watchTimeout?.minSeconds ?? DEFAULT_MIN_WATCH_TIMEOUT_S;
      const timeoutSeconds = Math.floor(minSeconds * (1 + this.random()));
      const query: Record<string, string> = {
        resourceVersion: this.rv,
        allowWatchBookmarks: 'true',
        timeoutSeconds: String(timeoutSeconds),
      };
      if (this.opts.labelSelector) query['labelSelector'] = this.opts.labelSelector;
      if (this.opts.fieldSelector) query['fieldSelector'] = this.opts.fieldSelector;

      const onLine = (line: WatchLine): void => {
        if (settled) return;
        if (line.kind === 'malformed') return finish({ kind: 'malformed', line: line.snippet });
        if (line.type === 'ERROR') {
          const status = line.object as StatusObject;
          if (status.code === 410) return finish({ kind: 'gone', events });
          return finish({
            kind: 'error',
            err: new Error(
              `the apiserver sent a watch ERROR event: ${status.code ?? '?'} ${status.reason ?? ''} ${status.message ?? ''}`,
            ),
          });
        }
        events++;
        this.apply(line);
      };
      streamWatch({
        kubeConfig: this.opts.kubeConfig,
        path: this.opts.source.watchPath,
        query,
        signal: session.signal,
        clock: this.opts.clock,
        // The server ends the watch at timeoutSeconds (with a bookmark 2 s before, and about once a
        // minute when the resource moves): silent past that, the connection is dead.
        silenceMs: timeoutSeconds * 1000 + (this.opts.watchTimeout?.watchdogMarginMs ?? DEFAULT_WATCHDOG_MARGIN_MS),
        onLine,
      }).then(
        (answer) => {
          if (answer.kind === 'refused') {
            if (answer.code === 410) return finish({ kind: 'gone', events });
            return finish({
              kind: 'error',
              err: new Error(
                `the apiserver refused the watch: HTTP ${answer.code} ${answer.status.reason ?? ''} ${answer.status.message ?? ''}`.trim(),
              ),
            });
          }
          // Closed by the server (its watch timeout). A watch that ended at once and empty counts
          // as a failure, so a server that closes at once is not hammered.
          const healthy = events > 0 || this.opts.clock.now() - started >= 1000;
          finish({ kind: 'ended', healthy });
        },
        (err: unknown) => finish({ kind: 'error', err }),
      );
    });
  }

  /** One ADDED/MODIFIED/DELETED/BOOKMARK event; a throw here would end the watch as an error, so handlers are guarded. */
  private apply(event: WatchEvent): void {
    const meta = (event.object as { metadata?: { resourceVersion?: string } } | null)?.metadata;
    try {
      if (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'DELETED') return;
      const view = this.project(event.object as T);
      if (view === undefined) return;
      if (event.type === 'DELETED') this.applyDelete(this.opts.key(view), view);
      else this.applyUpsert(this.opts.key(view), view);
    } finally {
      if (meta?.resourceVersion) this.rv = meta.resourceVersion;
    }
  }

  private applyUpsert(key: string, view: V): void {
    if (this.deletedSince(key, view)) return;
    const cached = this.store.get(key);
    // Our own write (observeWrite) may already be newer than this event; its own event follows.
    if (cached === undefined || isNewer(this.opts.resourceVersion(cached), this.opts.resourceVersion(view)) !== true) {
      this.emit(key, view, this.store.set(key, view));
    }
  }

  private applyDelete(key: string, view: V): void {
    const gone = this.deletedByUs.get(key);
    this.deletedByUs.delete(key);
    const cached = this.store.get(key);
    // The object of that name our own write made since (observeWrite) is not the one deleted.
    if (cached !== undefined && isNewer(this.opts.resourceVersion(cached), this.opts.resourceVersion(view)) === true)
      return;
    // Handlers hear of a delete once, when its event comes, whether or not our own delete already removed it.
    const old = this.store.delete(key) ?? gone;
    if (old !== undefined) this.emit(key, undefined, old);
  }

  private project(obj: T): V | undefined {
    try {
      return this.opts.project(obj);
    } catch (err) {
      this.counters.handlerErrors++;
      this.log('error', `informer ${this.opts.name}: cannot project an object, skipped`, { err: describe(err) });
      return undefined;
    }
  }

  private emit(key: string, view: V | undefined, old: V | undefined): void {
    for (const handler of this.handlers) {
      try {
        handler(key, view, old);
      } catch (err) {
        this.counters.handlerErrors++;
        this.log('error', `informer ${this.opts.name}: change handler threw`, { key, err: describe(err) });
      }
    }
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
