// The client-node API objects the adapter uses, made once from one KubeConfig.
import { createSecureContext } from 'node:tls';
import { Agent } from 'undici';
import {
  AppsV1Api,
  BatchV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  PolicyV1Api,
  StorageV1Api,
  type ConnectOptions,
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
  storage: StorageV1Api;
  custom: CustomObjectsApi;
  events: EventsV1Api;
}

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

/** The pools poolConnections() shares: kubeCall must not close them after a request. */
export const sharedDispatchers = new WeakSet<Dispatcher>();
const pooled = new WeakSet<KubeConfig>();

/**
 * How long an idle pooled connection is kept, as kube-apiserver (its IdleTimeout) and client-go do.
 * undici keeps one 4 s unless the server hints otherwise, and kube-apiserver sends no hint: every
 * quiet moment of the controller cost new TLS handshakes afterwards.
 */
const IDLE_CONNECTION_MS = 90_000;

/**
 * One keep-alive connection pool per KubeConfig for every API client made from it. client-node
 * 2.x gives each request a new undici Agent, so each request opened a new TLS connection (handshake,
 * certificates parsed again): at 5,000 nodes that was most of the controller's CPU and a native-memory
 * churn the V8 heap does not see. The KubeConfig is the clients' auth method (makeApiClient passes
 * `default: this`), so its applySecurityAuthentication is where the request gets its dispatcher: the
 * first one is kept and given to every later request. For a direct TLS connection (no proxy) that
 * one is built here from the TLS options client-node chose (createDispatcherOptions), with one TLS
 * context for all its connections (Node builds one per connection from the PEMs otherwise) and idle
 * connections kept longer; later requests then get no Agent of their own from client-node (building
 * and closing one per request was 2 % of the controller's CPU at 2,000 nodes). Credentials are the
 * KubeConfig's, read once at start (bearer tokens still go per request, in headers); the server
 * certificate is verified as client-node asks.
 */
export function poolConnections(kubeConfig: KubeConfig): void {
  if (pooled.has(kubeConfig)) return;
  pooled.add(kubeConfig);
  const apply = kubeConfig.applySecurityAuthentication.bind(kubeConfig);
  const options = kubeConfig.createDispatcherOptions.bind(kubeConfig);
  let direct: ConnectOptions | undefined;
  let shared: Dispatcher | undefined;
  kubeConfig.createDispatcherOptions = (cluster, agentOptions) => {
    // Once the pool is built, client-node need not build an Agent per request only to have it closed.
    if (shared !== undefined && direct !== undefined) return { type: 'none' };
    const chosen = options(cluster, agentOptions);
    if (chosen.type === 'agent') direct = chosen.connect;
    return chosen;
  };
  kubeConfig.applySecurityAuthentication = async (context: RequestContext): Promise<void> => {
    await apply(context);
    const fresh = context.getDispatcher();
    if (shared === undefined) {
      if (fresh === undefined) return;
      shared = direct === undefined ? fresh : pooledAgent(direct);
      sharedDispatchers.add(shared);
    }
    if (fresh === shared) return;
    context.setDispatcher(shared);
    // Never connected: closing it frees nothing but its object.
    fresh?.close().catch(() => undefined);
  };
}

function pooledAgent(connect: ConnectOptions): Dispatcher {
  const { ca, cert, key, pfx, passphrase, ...rest } = connect;
  const secureContext = createSecureContext(
    Object.fromEntries(Object.entries({ ca, cert, key, pfx, passphrase }).filter(([, v]) => v !== undefined)),
  );
  const agent = new Agent({
    keepAliveTimeout: IDLE_CONNECTION_MS,
    keepAliveMaxTimeout: IDLE_CONNECTION_MS,
    connect: { ...rest, secureContext },
  });
  // undici closes a connection after any DELETE that carries a body, in case the server left the body
  // unread; kube-apiserver reads it (DeleteOptions: the preconditions that guard every Lease delete),
  // so the connection is kept: it was 1.3 of the 2.9 TLS connections opened per node upgraded.
  return agent.compose(
    (dispatch) => (options, handler) =>
      dispatch(options.method === 'DELETE' ? { ...options, reset: false } : options, handler),
  );
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
    storage: kubeConfig.makeApiClient(StorageV1Api),
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    events: kubeConfig.makeApiClient(EventsV1Api),
  };
}

/** fieldManager of everything the controller writes (the GitOps sync uses its own). */
export const FIELD_MANAGER = 'kangalpatch-controller';
