// Reading a Secret (the Talos credentials); values come back decoded.
//
// The job and plan reconcilers need the Talos Secret on every pass that speaks to Talos (4 GETs per
// node upgraded at 1,000 workers). `watchedSecrets` answers those reads from a watch on that one
// Secret instead (field selector metadata.name, operator namespace only), started on the first read
// of a name: a rotated Secret arrives with its new resourceVersion as soon as the apiserver sends
// the event. Until that watch has its first list (or when it cannot list: RBAC without list/watch),
// a read is a GET, as before.
//
// The Role grants get/list/watch on the named Talos Secrets only (resourceNames; a field-selected
// list or watch is authorized by name). A watch is stopped when no pass read its Secret for
// IDLE_MS (no plan or job uses it any more: one exact timer per watched name), and at once when a read
// of it is refused (403: a name the install did not grant), so nothing retries a forbidden watch.
import type { KubeConfig, V1Secret } from '@kubernetes/client-node';
import type { Clock } from '../runtime/clock.js';
import type { OpContext } from '../runtime/context.js';
import type { LogFn } from '../runtime/log.js';
import { isOutcomeError } from '../runtime/outcome.js';
import { kubeCall } from './call.js';
import type { KubeClients } from './clients.js';
import { createInformer, type InformerSource, type KubeInformer } from './informer.js';
import type { SecretView } from './views.js';

function decode(data: Record<string, string> | undefined): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  for (const [key, value] of Object.entries(data ?? {})) out[key] = new Uint8Array(Buffer.from(value, 'base64'));
  return out;
}

function projectSecret(s: V1Secret): SecretView {
  return { name: s.metadata?.name ?? '', resourceVersion: s.metadata?.resourceVersion ?? '', data: decode(s.data) };
}

async function getSecret(
  c: KubeClients,
  ctx: OpContext,
  namespace: string,
  name: string,
): Promise<SecretView | undefined> {
  try {
    return projectSecret(
      await kubeCall(ctx, `read Secret ${namespace}/${name}`, (o) =>
        c.core.readNamespacedSecret({ namespace, name }, o),
      ),
    );
  } catch (err) {
    if (isOutcomeError(err) && err.code === 404) return undefined;
    throw err;
  }
}

export async function readSecret(
  c: KubeClients,
  ctx: OpContext,
  namespace: string,
  name: string,
): Promise<Readonly<Record<string, Uint8Array>> | undefined> {
  return (await getSecret(c, ctx, namespace, name))?.data;
}

export interface WatchedSecrets {
  /** The Secret `name` of the operator namespace (undefined: it does not exist). */
  read(ctx: OpContext, name: string): Promise<SecretView | undefined>;
  /** Watches run from now until `signal` aborts; before, every read is a GET. */
  start(signal: AbortSignal): void;
  /** Names watched and whether each has synced (tests, diagnostics). */
  watched(): { name: string; synced: boolean }[];
}

export interface WatchedSecretsOptions {
  kubeConfig: KubeConfig;
  namespace: string;
  clock: Clock;
  log: LogFn;
  resyncMs?: number;
  backoff?: { initialMs?: number; maxMs?: number };
}

/** A watched Secret nobody read for this long is no longer watched. */
const IDLE_MS = 10 * 60_000;

export function watchedSecrets(c: KubeClients, o: WatchedSecretsOptions): WatchedSecrets {
  const ns = o.namespace;
  const watches = new Map<
    string,
    { informer: KubeInformer<SecretView>; stop: AbortController; lastRead: number; idleTimer: boolean }
  >();
  let signal: AbortSignal | undefined;
  const source: InformerSource<V1Secret> = {
    watchPath: `/api/v1/namespaces/${encodeURIComponent(ns)}/secrets`,
    list: async (q, opts) => {
      const list = await c.core.listNamespacedSecret({ ...q, namespace: ns }, opts);
      return {
        items: list.items,
        resourceVersion: list.metadata?.resourceVersion ?? '',
        continue: list.metadata?._continue,
      };
    },
  };
  const unwatch = (name: string, why: string): void => {
    const w = watches.get(name);
    if (!w) return;
    w.stop.abort();
    watches.delete(name);
    o.log('info', `stopped watching Secret ${ns}/${name}: ${why}`, { secret: name });
  };
  /** Notes a read of `name`; its one idle timer, when it fires, stops the watch or waits for the rest. */
  const touch = (name: string): void => {
    const w = watches.get(name);
    if (!w || signal === undefined) return;
    w.lastRead = o.clock.now();
    if (w.idleTimer) return;
    w.idleTimer = true;
    const wait = (ms: number): void => {
      o.clock.sleep(ms, AbortSignal.any([signal ?? w.stop.signal, w.stop.signal])).then(
        () => {
          const left = w.lastRead + IDLE_MS - o.clock.now();
          if (left > 0) wait(left);
          else unwatch(name, `not read for ${IDLE_MS / 60_000} minutes`);
        },
        () => undefined,
      );
    };
    wait(IDLE_MS);
  };
  const watch = (name: string): KubeInformer<SecretView> | undefined => {
    if (signal === undefined || signal.aborted) return undefined;
    let w = watches.get(name);
    if (!w) {
      const stop = new AbortController();
      const informer = createInformer<V1Secret, SecretView>({
        name: `secret ${ns}/${name}`,
        kubeConfig: o.kubeConfig,
        source,
        project: projectSecret,
        key: (v) => v.name,
        resourceVersion: (v) => v.resourceVersion,
        fieldSelector: `metadata.name=${name}`,
        clock: o.clock,
        log: o.log,
        resyncMs: o.resyncMs,
        backoff: o.backoff,
      });
      w = { informer, stop, lastRead: o.clock.now(), idleTimer: false };
      watches.set(name, w);
      informer.start(AbortSignal.any([signal, stop.signal]));
    }
    touch(name);
    return w.informer;
  };
  return {
    read: async (ctx, name) => {
      const informer = watch(name);
      if (informer?.isSynced()) return informer.get(name);
      try {
        return await getSecret(c, ctx, ns, name);
      } catch (err) {
        if (isOutcomeError(err) && err.code === 403) unwatch(name, 'reading it is forbidden');
        throw err;
      }
    },
    start: (s) => {
      signal = s;
    },
    watched: () => [...watches].map(([name, w]) => ({ name, synced: w.informer.isSynced() })),
  };
}
