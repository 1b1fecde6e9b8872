// A fresh read that disagrees with a cache on what a decision rests on means the informer missed
// events: its watch may be silent on a half-open connection (no FIN: a NAT or load balancer dropped
// its state), which the watchdog notices only after the watch's server timeout. The informer is
// restarted from a fresh list so every other job and plan sees the truth too, not only this one.
import { isDeepStrictEqual } from 'node:util';
import type { Informer } from '../runtime/informer.js';
import type { Logger } from '../telemetry/logger.js';

/** What a cache holds of something, and what a fresh read of it returned. */
export interface CachedAndFresh<T = unknown> {
  cached: T;
  fresh: T;
}

/** One comparison: the cache's name (`nodes`), what was compared (`node/w-1`), and both reads. */
export interface StaleCheck extends CachedAndFresh {
  cache: string;
  resource: string;
}

/** Restarts `informer` from a fresh list when `cached` and `fresh` differ; true when they did. */
export function restartIfStale(
  informer: Pick<Informer<unknown>, 'breakWatch'>,
  log: Logger,
  { cache, resource, cached, fresh }: StaleCheck,
): boolean {
  if (isDeepStrictEqual(cached, fresh)) return false;
  log.warn(
    { resource, cached, fresh },
    `the ${cache} cache is stale: ${resource} differs from a fresh read; restarting the ${cache} watch from a fresh list`,
  );
  informer.breakWatch({ relist: true, reason: `stale cache: ${resource} differed from a fresh read` });
  return true;
}

/** `view` without its resourceVersion (it moves with every status write, not with what we decide by). */
export function withoutVersion<V extends { resourceVersion: string }>(
  view: V | undefined,
): Omit<V, 'resourceVersion'> | undefined {
  if (view === undefined) return undefined;
  const { resourceVersion: _, ...rest } = view;
  return rest;
}
