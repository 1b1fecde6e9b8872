// Objects of any kind, for health checks: API discovery (apiVersion + kind → resource) and a list+watch
// informer over the resource that keeps each object bounded (managedFields and the last-applied
// annotation dropped, a huge spec cut). Additive: the typed informers in informers.ts are untouched.
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  KubernetesObjectApi,
  type KubeConfig,
  type V1APIResource,
} from '@kubernetes/client-node';
import type { Clock } from '../runtime/clock.js';
import type { OpContext } from '../runtime/context.js';
import type { LogFn } from '../runtime/log.js';
import { kubeCall } from './call.js';
import type { KubeClients } from './clients.js';
import { createInformer, type InformerSource, type KubeInformer } from './informer.js';

export interface DynamicResource {
  apiVersion: string;
  kind: string;
  /** '' for the core group. */
  group: string;
  version: string;
  plural: string;
  namespaced: boolean;
}

/** One object as a health check reads it. */
export interface ObjectView {
  key: string;
  namespace: string;
  name: string;
  resourceVersion: string;
  labels: Readonly<Record<string, string>>;
  object: Record<string, unknown>;
}

/** `volumes.longhorn.io`, `deployments.apps`, `pods` (the name RBAC rules and kubectl use). */
export const resourceName = (r: Pick<DynamicResource, 'plural' | 'group'>): string =>
  r.group === '' ? r.plural : `${r.plural}.${r.group}`;

class Discovery extends KubernetesObjectApi {
  find(apiVersion: string, kind: string): Promise<V1APIResource | undefined> {
    return this.resource(apiVersion, kind);
  }
}

/** The resource of apiVersion + kind from API discovery; undefined when the server does not serve it. */
async function discoverResource(
  ctx: OpContext,
  kubeConfig: KubeConfig,
  apiVersion: string,
  kind: string,
): Promise<DynamicResource | undefined> {
  const api = kubeConfig.makeApiClient(Discovery);
  const found = await kubeCall(ctx, `discover ${kind} in ${apiVersion}`, () =>
    api.find(apiVersion, kind).catch((err: unknown) => {
      // An unknown group/version answers 404: the kind is not served.
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }),
  );
  if (!found) return undefined;
  const slash = apiVersion.indexOf('/');
  return {
    apiVersion,
    kind,
    group: slash < 0 ? '' : apiVersion.slice(0, slash),
    version: slash < 0 ? apiVersion : apiVersion.slice(slash + 1),
    plural: found.name,
    namespaced: found.namespaced,
  };
}

const MAX_OBJECT_BYTES = 256 * 1024;
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** The object without what no health check reads, bounded. */
export function boundObject(raw: unknown): Record<string, unknown> {
  const o = { ...((raw ?? {}) as Record<string, unknown>) };
  const md = { ...((o.metadata ?? {}) as Record<string, unknown>) };
  delete md.managedFields;
  if (md.annotations && typeof md.annotations === 'object') {
    const annotations = { ...(md.annotations as Record<string, unknown>) };
    delete annotations[LAST_APPLIED];
    md.annotations = annotations;
  }
  o.metadata = md;
  if (JSON.stringify(o).length > MAX_OBJECT_BYTES) {
    // Status is what health checks read; a huge spec goes first, then whatever else is left.
    delete o.spec;
    if (JSON.stringify(o).length > MAX_OBJECT_BYTES)
      return {
        apiVersion: o.apiVersion,
        kind: o.kind,
        metadata: { name: md.name, namespace: md.namespace, labels: md.labels },
      };
  }
  return o;
}

function project(raw: unknown): ObjectView {
  const object = boundObject(raw);
  const md = object.metadata as {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
  };
  const namespace = md.namespace ?? '';
  const name = md.name ?? '';
  return {
    key: namespace === '' ? name : `${namespace}/${name}`,
    namespace,
    name,
    resourceVersion: md.resourceVersion ?? '',
    labels: md.labels ?? {},
    object,
  };
}

export interface ObjectInformerSettings {
  kubeConfig: KubeConfig;
  clock: Clock;
  log: LogFn;
  resyncMs?: number;
}

interface RawList {
  items?: unknown[];
  metadata?: { resourceVersion?: string; continue?: string; _continue?: string };
}

/** List (and the watch path) of one resource, in one namespace or all. */
function objectSource(
  kubeConfig: KubeConfig,
  clients: Pick<KubeClients, 'custom'>,
  r: DynamicResource,
  namespace: string | undefined,
): InformerSource<unknown> {
  const base = r.group === '' ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
  const ns = r.namespaced && namespace !== undefined ? namespace : undefined;
  const watchPath = `${base}${ns === undefined ? '' : `/namespaces/${encodeURIComponent(ns)}`}/${r.plural}`;
  const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
  return {
    watchPath,
    list: async (q, o) => {
      let raw: RawList;
      if (r.group === '') {
        // The core group has no custom-objects path; the generic client lists it (without the per-call signal).
        raw = await objects.list(
          r.apiVersion,
          r.kind,
          ns,
          undefined,
          undefined,
          undefined,
          q.fieldSelector,
          q.labelSelector,
          q.limit,
          q._continue,
        );
      } else if (ns !== undefined) {
        raw = (await clients.custom.listNamespacedCustomObject(
          { group: r.group, version: r.version, namespace: ns, plural: r.plural, ...q },
          o,
        )) as RawList;
      } else {
        raw = (await clients.custom.listClusterCustomObject(
          { group: r.group, version: r.version, plural: r.plural, ...q },
          o,
        )) as RawList;
      }
      return {
        items: raw.items ?? [],
        resourceVersion: raw.metadata?.resourceVersion ?? '',
        continue: raw.metadata?.continue || raw.metadata?._continue || undefined,
      };
    },
  };
}

const describe = (r: DynamicResource, namespace: string | undefined): string =>
  `${resourceName(r)}${r.namespaced && namespace !== undefined ? ` in ${namespace}` : ''}`;

/** A list+watch informer over one resource, in one namespace or all. */
function makeObjectInformer(
  s: ObjectInformerSettings,
  clients: Pick<KubeClients, 'custom'>,
  r: DynamicResource,
  namespace: string | undefined,
): KubeInformer<ObjectView> {
  return createInformer<unknown, ObjectView>({
    name: describe(r, namespace),
    kubeConfig: s.kubeConfig,
    clock: s.clock,
    log: s.log,
    resyncMs: s.resyncMs,
    source: objectSource(s.kubeConfig, clients, r, namespace),
    project,
    key: (v) => v.key,
    resourceVersion: (v) => v.resourceVersion,
  });
}

const LIST_PAGE = 500;

/** The cluster's configuration and the client that lists objects through it: they go together. */
interface ObjectReader {
  kubeConfig: KubeConfig;
  clients: Pick<KubeClients, 'custom'>;
}

/** Every object of the resource as the apiserver has it now (not an informer's cache), page by page. */
async function listObjects(
  ctx: OpContext,
  { kubeConfig, clients }: ObjectReader,
  r: DynamicResource,
  namespace: string | undefined,
): Promise<ObjectView[]> {
  const source = objectSource(kubeConfig, clients, r, namespace);
  const out: ObjectView[] = [];
  let token: string | undefined;
  do {
    const query = { limit: LIST_PAGE, ...(token === undefined ? {} : { _continue: token }) };
    const page = await kubeCall(ctx, `list ${describe(r, namespace)}`, (o) => source.list(query, o));
    out.push(...page.items.map(project));
    token = page.continue || undefined;
  } while (token !== undefined);
  return out;
}

/** What the health-check shell uses of the cluster: discovery, object informers, live lists, access reviews. */
export interface ObjectSource {
  discover(ctx: OpContext, apiVersion: string, kind: string): Promise<DynamicResource | undefined>;
  informer(resource: DynamicResource, namespace: string | undefined): KubeInformer<ObjectView>;
  /** The objects read live (a health check's timeout is confirmed on them, not the informer's cache). */
  list(ctx: OpContext, resource: DynamicResource, namespace: string | undefined): Promise<ObjectView[]>;
  /** SelfSubjectAccessReview for each verb; the verbs the controller may not use. */
  deniedVerbs(
    ctx: OpContext,
    resource: DynamicResource,
    namespace: string | undefined,
    verbs: readonly string[],
  ): Promise<string[]>;
  /** Who the controller is (SelfSubjectReview): `ServiceAccount ns/name`, or `user <name>`. */
  whoAmI(ctx: OpContext): Promise<string>;
}

/** `system:serviceaccount:kangal-patch:kangal-patch` → `ServiceAccount kangal-patch/kangal-patch`. */
export function describeUser(username: string | undefined): string {
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(username ?? '');
  if (sa) return `ServiceAccount ${sa[1] ?? ''}/${sa[2] ?? ''}`;
  return username ? `user ${username}` : "the controller's identity";
}

export function makeObjectSource(
  kubeConfig: KubeConfig,
  clients: Pick<KubeClients, 'custom'>,
  s: Omit<ObjectInformerSettings, 'kubeConfig'>,
): ObjectSource {
  const authz = kubeConfig.makeApiClient(AuthorizationV1Api);
  const authn = kubeConfig.makeApiClient(AuthenticationV1Api);
  return {
    discover: (ctx, apiVersion, kind) => discoverResource(ctx, kubeConfig, apiVersion, kind),
    informer: (r, namespace) => makeObjectInformer({ ...s, kubeConfig }, clients, r, namespace),
    list: (ctx, r, namespace) => listObjects(ctx, { kubeConfig, clients }, r, namespace),
    deniedVerbs: async (ctx, r, namespace, verbs) => {
      const denied: string[] = [];
      for (const verb of verbs) {
        const review = await kubeCall(ctx, `review access to ${verb} ${resourceName(r)}`, (o) =>
          authz.createSelfSubjectAccessReview(
            {
              body: {
                apiVersion: 'authorization.k8s.io/v1',
                kind: 'SelfSubjectAccessReview',
                spec: {
                  resourceAttributes: {
                    group: r.group,
                    version: r.version,
                    resource: r.plural,
                    verb,
                    ...(r.namespaced && namespace !== undefined ? { namespace } : {}),
                  },
                },
              },
            },
            o,
          ),
        );
        if (review.status?.allowed !== true) denied.push(verb);
      }
      return denied;
    },
    whoAmI: async (ctx) => {
      const review = await kubeCall(ctx, 'self subject review', (o) =>
        authn.createSelfSubjectReview(
          { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } },
          o,
        ),
      );
      return describeUser(review.status?.userInfo?.username);
    },
  };
}
