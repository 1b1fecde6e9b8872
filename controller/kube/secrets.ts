// Reading a Secret (the Talos credentials); values come back decoded.
//
// The job and plan reconcilers need the Talos Secret on every pass that speaks to Talos (4 GETs per
// node upgraded at 1,000 workers). `watchedSecrets` answers those reads from a watch on that one
// Secret instead (field selector metadata.name, operator namespace only), started on the first read
// of a name: a rotated Secret arrives with its new resourceVersion as soon as the apiserver sends
// the event. Until that watch has its first list (or when it cannot list: RBAC without list/watch),
// a read is a GET, as before.
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

async function getSecret(c: KubeClients, ctx: OpContext, namespace: string, name: string): Promise<SecretView | undefined> {
  try {
    return projectSecret(await kubeCall(ctx, `read Secret ${namespace}/${name}`, (o) => c.core.readNamespacedSecret({ namespace, name }, o)));
  } catch (err) {
    if (isOutcomeError(err) && err.code === 404) return undefined;
    throw err;
  }
}

export async function readSecret(c: KubeClients, ctx: OpContext, namespace: string, name: string): Promise<Readonly<Record<string, Uint8Array>> | undefined> {
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

export function watchedSecrets(c: KubeClients, o: WatchedSecretsOptions): WatchedSecrets {
  const ns = o.namespace;
  const informers = new Map<string, KubeInformer<SecretView>>();
  let signal: AbortSignal | undefined;
  const source: InformerSource<V1Secret> = {
    watchPath: `/api/v1/namespaces/${encodeURIComponent(ns)}/secrets`,
    list: async (q, opts) => {
      const list = await c.core.listNamespacedSecret({ ...q, namespace: ns }, opts);
      return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '', continue: list.metadata?._continue };
    },
  };
  const watch = (name: string): KubeInformer<SecretView> | undefined => {
    if (signal === undefined || signal.aborted) return undefined;
    let informer = informers.get(name);
    if (!informer) {
      informer = createInformer<V1Secret, SecretView>({
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
      informers.set(name, informer);
      informer.start(signal);
    }
    return informer;
  };
  return {
    read: async (ctx, name) => {
      const informer = watch(name);
      if (informer?.isSynced()) return informer.get(name);
      return getSecret(c, ctx, ns, name);
    },
    start: (s) => {
      signal = s;
    },
    watched: () => [...informers].map(([name, i]) => ({ name, synced: i.isSynced() })),
  };
}
