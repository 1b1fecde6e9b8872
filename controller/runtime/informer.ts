// What reconcilers see of a watched resource: a local cache of small projected views that follows
// the apiserver (list + watch, re-list on 410 Gone, restart on any error with backoff), and
// synchronous change notifications that only compute keys for the work queue.

export interface Informer<V> {
  /** Resolves once the first list has been stored (caches synced). */
  readonly synced: Promise<void>;
  /** True once the first list has been stored. */
  isSynced(): boolean;
  get(key: string): V | undefined;
  list(): V[];
  /**
   * Called for every add, update and delete (view undefined on delete), and for every object again
   * after a re-list. Handlers must be synchronous and cheap (compute a key, add it to a queue).
   */
  onChange(handler: (key: string, view: V | undefined, old: V | undefined) => void): void;
  /**
   * Stores the object our own write returned, when it is newer than the cached one, so the next
   * pass does not decide on a view older than what we just wrote.
   */
  observeWrite(view: V): void;
  /**
   * Forgets the object our own delete removed (sent with the precondition `resourceVersion`), so the
   * next pass does not decide on it; events of it older than the delete no longer bring it back.
   */
  observeDelete(key: string, resourceVersion: string): void;
  /**
   * Aborts the current watch as if its connection had broken (a watch error, logged); the informer
   * watches again after its backoff, from where it was, or from a fresh list with `relist` — for a
   * cache found stale, whose watch may have lost events (silent on a half-open connection).
   */
  breakWatch(opts?: { relist?: boolean; reason?: string }): void;
  /** Starts list+watch; stops when the signal aborts. */
  start(signal: AbortSignal): void;
}
