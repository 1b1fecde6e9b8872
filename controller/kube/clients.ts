// The client-node API objects the adapter uses, made once from one KubeConfig.
import {
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  PolicyV1Api,
  type KubeConfig,
  type RequestContext,
} from '@kubernetes/client-node';

export interface KubeClients {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  apps: AppsV1Api;
  batch: BatchV1Api;
  coordination: CoordinationV1Api;
  policy: PolicyV1Api;
  custom: CustomObjectsApi;
  events: EventsV1Api;
}

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

/** The pools poolConnections() shares: kubeCall must not close them after a request. */
export const sharedDispatchers = new WeakSet<Dispatcher>();
const pooled = new WeakSet<KubeConfig>();

/**
 * One keep-alive connection pool per KubeConfig for every API client made from it. client-node
 * 2.x gives each request a new undici Agent, so each request opened a new TLS connection (handshake,
 * certificates parsed again): at 5,000 nodes that was most of the controller's CPU and a native-memory
 * churn the V8 heap does not see. The KubeConfig is the clients' auth method (makeApiClient passes
 * `default: this`), so its applySecurityAuthentication is where the request gets its dispatcher: the
 * first one it builds is kept and given to every later request. Credentials are the KubeConfig's,
 * read once at start (bearer tokens still go per request, in headers).
 */
export function poolConnections(kubeConfig: KubeConfig): void {
  if (pooled.has(kubeConfig)) return;
  pooled.add(kubeConfig);
  const apply = kubeConfig.applySecurityAuthentication.bind(kubeConfig);
  let shared: Dispatcher | undefined;
  kubeConfig.applySecurityAuthentication = async (context: RequestContext): Promise<void> => {
    await apply(context);
    const fresh = context.getDispatcher();
    if (fresh === undefined) return;
    if (shared === undefined) {
      shared = fresh;
      sharedDispatchers.add(fresh);
      return;
    }
    context.setDispatcher(shared);
    // Never connected: closing it frees nothing but its object.
    fresh.close().catch(() => undefined);
  };
}

export function makeClients(kubeConfig: KubeConfig): KubeClients {
  poolConnections(kubeConfig);
  return {
    kubeConfig,
    core: kubeConfig.makeApiClient(CoreV1Api),
    apps: kubeConfig.makeApiClient(AppsV1Api),
    batch: kubeConfig.makeApiClient(BatchV1Api),
    coordination: kubeConfig.makeApiClient(CoordinationV1Api),
    policy: kubeConfig.makeApiClient(PolicyV1Api),
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    events: kubeConfig.makeApiClient(EventsV1Api),
  };
}

/** fieldManager of everything the controller writes (the GitOps sync uses its own). */
export const FIELD_MANAGER = 'kangalpatch-controller';
