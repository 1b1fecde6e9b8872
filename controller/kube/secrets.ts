// Reading a Secret (the Talos credentials); values come back decoded.
import type { OpContext } from '../runtime/context.js';
import { isOutcomeError } from '../runtime/outcome.js';
import { kubeCall } from './call.js';
import type { KubeClients } from './clients.js';

export async function readSecret(c: KubeClients, ctx: OpContext, namespace: string, name: string): Promise<Record<string, Uint8Array> | undefined> {
  try {
    const secret = await kubeCall(ctx, `read Secret ${namespace}/${name}`, (o) => c.core.readNamespacedSecret({ namespace, name }, o));
    const out: Record<string, Uint8Array> = {};
    for (const [key, value] of Object.entries(secret.data ?? {})) out[key] = new Uint8Array(Buffer.from(value, 'base64'));
    return out;
  } catch (err) {
    if (isOutcomeError(err) && err.code === 404) return undefined;
    throw err;
  }
}
