// The objects health checks read: one informer per (apiVersion, kind, namespace) that an active plan
// checks, started when the first such plan appears and stopped when none needs it any more. An
// object change wakes the plans checking that kind, so a gate opens at once, not at a poll interval.
import type { HealthCheck } from '../../schemas/health.js';
import type { CheckFacts } from '../core/gates/health.js';
import { matchesSelector } from '../core/selector.js';
import { isDeepStrictEqual } from 'node:util';
import {
  resourceName,
  type DynamicResource,
  type KubeInformer,
  type ObjectSource,
  type ObjectView,
} from '../kube/index.js';
import type { Clock } from '../runtime/clock.js';
import { rootContext, type OpContext } from '../runtime/context.js';
import type { LogFn } from '../runtime/log.js';
import { compileExpression, verdicts } from './cel.js';

type Target = Pick<HealthCheck, 'apiVersion' | 'kind' | 'namespace'>;

/** The informer a check reads from. */
export const watchKey = (c: Target): string => `${c.apiVersion}|${c.kind}|${c.namespace ?? ''}`;

interface Watch {
  target: Target;
  stop: AbortController;
  resource?: DynamicResource;
  informer?: KubeInformer<ObjectView>;
  /** Why the objects cannot be read (discovery failed or the kind is not served). */
  error?: string;
}

export interface HealthWatchesDeps {
  objects: ObjectSource;
  clock: Clock;
  log: LogFn;
  /** Called with the watch key when its objects changed, its first list arrived or discovery ended. */
  changed: (key: string) => void;
  /** How soon a kind the server does not serve (yet) is looked up again. */
  rediscoverMs?: number;
}

const REDISCOVER_MS = 15_000;
const DISCOVERY_MS = 15_000;

export class HealthWatches {
  private readonly watches = new Map<string, Watch>();

  constructor(private readonly deps: HealthWatchesDeps) {}

  /** Starts the watches `checks` need and stops the others. */
  sync(checks: readonly Target[], signal: AbortSignal): void {
    const wanted = new Map(checks.map((c) => [watchKey(c), c]));
    for (const [key, w] of this.watches) {
      if (wanted.has(key)) continue;
      w.stop.abort();
      this.watches.delete(key);
      this.deps.log('info', 'health checks: stopped watching', {
        kind: w.target.kind,
        apiVersion: w.target.apiVersion,
        namespace: w.target.namespace,
      });
    }
    for (const [key, target] of wanted) {
      if (this.watches.has(key)) continue;
      const w: Watch = { target, stop: new AbortController() };
      this.watches.set(key, w);
      const stop = AbortSignal.any([signal, w.stop.signal]);
      void this.start(key, w, stop);
    }
  }

  /** Keys being watched (tests, logs). */
  keys(): string[] {
    return [...this.watches.keys()];
  }

  private async start(key: string, w: Watch, signal: AbortSignal): Promise<void> {
    const { target } = w;
    while (!signal.aborted) {
      try {
        const resource = await this.deps.objects.discover(
          rootContext(this.deps.clock, signal, DISCOVERY_MS),
          target.apiVersion,
          target.kind,
        );
        if (resource) {
          w.resource = resource;
          delete w.error;
          break;
        }
        w.error = `the API server does not serve kind ${target.kind} in ${target.apiVersion} (is its CRD installed?)`;
      } catch (err) {
        if (signal.aborted) return;
        // The API server's error text stays in the log: a check reports what it is, not what it read.
        w.error = `API discovery of ${target.kind} in ${target.apiVersion} failed (the controller's log says why)`;
        this.deps.log('warn', `health checks: API discovery of ${target.kind} in ${target.apiVersion} failed`, {
          error: err instanceof Error ? err.message : String(err),
        });
      }
      this.deps.changed(key);
      try {
        await this.deps.clock.sleep(this.deps.rediscoverMs ?? REDISCOVER_MS, signal);
      } catch {
        return;
      }
    }
    if (signal.aborted || !w.resource) return;
    const informer = this.deps.objects.informer(w.resource, target.namespace);
    w.informer = informer;
    informer.onChange(() => this.deps.changed(key));
    informer.start(signal);
    this.deps.log('info', 'health checks: watching', {
      resource: w.resource.plural,
      group: w.resource.group,
      namespace: target.namespace,
    });
    informer.synced.then(
      () => this.deps.changed(key),
      () => undefined,
    );
  }

  /** What a check sees now: every matched object's verdict, or why it cannot see them. */
  facts(check: HealthCheck): CheckFacts {
    const w = this.watches.get(watchKey(check));
    if (!w) return { state: 'unavailable', message: 'not watched yet' };
    if (w.error !== undefined) return { state: 'unavailable', message: w.error };
    if (!w.informer?.isSynced())
      return {
        state: 'unavailable',
        message: `waiting for the first list of ${w.resource?.plural ?? check.kind} (if this lasts, check the controller's RBAC and log)`,
      };
    return evaluate(check, matching(check, w.informer.list()));
  }

  /**
   * What a check sees on a live list of its objects (its timeout is about to be given: a watch silent
   * on a half-open connection can hide an object that recovered). A cache the list contradicts is
   * restarted from a fresh list. Without a synced watch the answer is the cached one: nothing was
   * listed that a verdict could rest on. A failed list throws.
   */
  async freshFacts(ctx: OpContext, check: HealthCheck): Promise<CheckFacts> {
    const w = this.watches.get(watchKey(check));
    if (!w?.resource || !w.informer?.isSynced()) return this.facts(check);
    const fresh = matching(check, await this.deps.objects.list(ctx, w.resource, w.target.namespace));
    const cached = matching(check, w.informer.list());
    const versions = (os: readonly ObjectView[]): string[] => os.map((o) => `${o.key}@${o.resourceVersion}`);
    if (!isDeepStrictEqual(versions(cached), versions(fresh))) {
      this.deps.log(
        'warn',
        `the ${resourceName(w.resource)} cache is stale: the objects of health check ${check.name} differ from a fresh list; restarting its watch from a fresh list`,
        { check: check.name, cached: versions(cached), fresh: versions(fresh) },
      );
      w.informer.breakWatch({
        relist: true,
        reason: `stale cache: the objects of health check ${check.name} differed from a fresh list`,
      });
    }
    return evaluate(check, fresh);
  }
}

/** The objects a check matches, in a stable order. */
function matching(check: HealthCheck, objects: readonly ObjectView[]): ObjectView[] {
  const matched = objects.filter(
    (o) =>
      (check.namespace === undefined || o.namespace === check.namespace) &&
      (check.objectName === undefined || o.name === check.objectName) &&
      (check.labelSelector === undefined || matchesSelector(check.labelSelector, o.labels)),
  );
  return matched.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** More objects than this in one check is a selector mistake (or a way to make the controller evaluate
 *  the whole cluster): the check cannot hold until it is narrowed. */
const MAX_MATCHED_OBJECTS = 1_000;

function evaluate(check: HealthCheck, matched: readonly ObjectView[]): CheckFacts {
  if (matched.length > MAX_MATCHED_OBJECTS) {
    return {
      state: 'unavailable',
      message: `it matches ${matched.length} objects, more than ${MAX_MATCHED_OBJECTS}: narrow it with namespace, objectName or labelSelector`,
    };
  }
  const compiled = compileExpression(check.expr);
  if (!compiled.ok) return { state: 'unavailable', message: `invalid CEL expression: ${compiled.error}` };
  return {
    state: 'observed',
    objects: verdicts(
      check.expr,
      compiled.evaluate,
      matched.map((o) => o.object),
    ),
  };
}

// Not before preflight passed: HealthCheckAccess reviews the grants first, so a missing one is named
// once instead of a watch retrying a 403. The first pass after preflight waits for the first list.
const ACTIVE_PHASES = new Set<string | undefined>(['InProgress', 'Paused']);

/** The checks of plans that can still schedule nodes (terminal plans need no watches). */
export function activeChecks(
  plans: readonly {
    spec?:
      | {
          healthChecks?: readonly HealthCheck[] | undefined;
          target: { autoUpdate?: { enabled?: boolean } | undefined };
        }
      | undefined;
    status: { phase?: string | undefined };
  }[],
): HealthCheck[] {
  return plans.flatMap((p) =>
    p.spec && !p.spec.target.autoUpdate?.enabled && ACTIVE_PHASES.has(p.status.phase)
      ? (p.spec.healthChecks ?? [])
      : [],
  );
}
