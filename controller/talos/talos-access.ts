// Talos clients for PatchJobs, plans and preflights: credentials only from a Secret in the operator
// namespace, endpoints from the job or plan (talosConfig.endpoints) or else the node's own InternalIP.
//
// A session reads the Secret once and serves every node it is asked for: with endpoints, one client
// (the node is chosen per call by the `node` metadata key); without, one client per node address,
// all built from the same parsed credentials. The parsed credentials are kept per Secret
// resourceVersion, so a pass that reads an unchanged Secret (from the watch: kube/secrets.ts) does
// not parse its PEM again, and a rotated Secret (new resourceVersion) is parsed and used at once.
import type { PatchJobSpec } from '../../schemas/patchjob.js';
import type { KubePort } from '../kube/port.js';
import type { OpContext } from '../runtime/context.js';
import { isOutcomeError, OutcomeError, OutcomeKind } from '../runtime/outcome.js';
import { createTalosClient, type TalosClientOptions } from './client.js';
import { loadCredentials, type TalosCredentials } from './credentials.js';
import type { TalosPort } from './port.js';

type TalosConfig = PatchJobSpec['talosConfig'];

/** Talos clients of one talosConfig for many nodes. */
export interface TalosSession {
  /** The client that reaches `nodeIP` (the same one for every node when the config has endpoints); do not close it, close the session. */
  forNode(nodeIP: string): TalosPort;
  /** Releases every client the session made. */
  close(): void;
}

type TalosOpen = (ctx: OpContext, talosConfig: TalosConfig) => Promise<TalosSession>;
/** One node's client; its close() ends it. */
export type TalosConnect = (ctx: OpContext, talosConfig: TalosConfig, nodeIP: string) => Promise<TalosPort>;

export interface TalosAccess {
  open: TalosOpen;
  connect: TalosConnect;
}

/** `options`: for every client it makes (e.g. `onCallEnd` for metrics). */
export function talosAccess(kube: KubePort, operatorNamespace: string, options: TalosClientOptions = {}): TalosAccess {
  /** Secret name → the credentials parsed from its last resourceVersion seen. */
  const parsed = new Map<string, { resourceVersion: string; credentials: TalosCredentials }>();

  const credentialsOf = async (ctx: OpContext, talosConfig: TalosConfig): Promise<TalosCredentials> => {
    const ref = talosConfig.secretRef;
    const namespace = ref.namespace ?? operatorNamespace;
    if (namespace !== operatorNamespace) {
      throw new OutcomeError({
        kind: OutcomeKind.Stalled,
        reason: 'TalosSecretOutsideOperatorNamespace',
        message: `talosConfig.secretRef points at namespace ${namespace}; the Talos credentials Secret must live in the operator namespace ${operatorNamespace}`,
      });
    }
    const secret = await kube.readOperatorSecret(ctx, ref.name).catch((err: unknown) => {
      // The controller reads only the Secrets the install names (RBAC resourceNames): any other name a
      // plan chooses is refused by the apiserver, which says 403, and the operator decides.
      if (isOutcomeError(err) && err.code === 403) {
        throw new OutcomeError({
          kind: OutcomeKind.Stalled,
          reason: 'TalosSecretNotGranted',
          code: 403,
          message: `the controller may not read Secret ${namespace}/${ref.name} (talosConfig.secretRef): it reads only the Talos credentials Secrets named at install; add ${ref.name} to talos.secretNames (Helm) or to the resourceNames of the secrets rule of Role ${namespace}/kangal-patch-controller (kustomize), or point the plan at a granted Secret`,
          cause: err,
        });
      }
      throw err;
    });
    if (!secret) {
      parsed.delete(ref.name);
      throw new OutcomeError({
        kind: OutcomeKind.Stalled,
        reason: 'TalosSecretNotFound',
        message: `Secret ${namespace}/${ref.name} (talosConfig.secretRef) does not exist: create it with keys ca.crt, tls.crt and tls.key from your talosconfig`,
      });
    }
    const known = parsed.get(ref.name);
    if (known && known.resourceVersion === secret.resourceVersion && secret.resourceVersion !== '')
      return known.credentials;
    // A Secret that does not parse throws a TalosApiError (BadCredentials) naming the field, as before.
    const credentials = loadCredentials(secret.data);
    parsed.set(ref.name, { resourceVersion: secret.resourceVersion, credentials });
    return credentials;
  };

  const open: TalosOpen = async (ctx, talosConfig) => {
    const credentials = await credentialsOf(ctx, talosConfig);
    const clients = new Map<string, TalosPort>();
    return {
      forNode: (nodeIP) => {
        const endpoints = talosConfig.endpoints ?? [nodeIP];
        const key = endpoints.join(',');
        let client = clients.get(key);
        if (!client) {
          client = createTalosClient({ endpoints, credentials }, options);
          clients.set(key, client);
        }
        return client;
      },
      close: () => {
        for (const c of clients.values()) c.close();
        clients.clear();
      },
    };
  };

  const connect: TalosConnect = async (ctx, talosConfig, nodeIP) => {
    const credentials = await credentialsOf(ctx, talosConfig);
    return createTalosClient({ endpoints: talosConfig.endpoints ?? [nodeIP], credentials }, options);
  };

  return { open, connect };
}
