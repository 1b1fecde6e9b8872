// Shared gRPC channel sets: every client built from the same endpoints and credentials uses one
// set of channels (one per endpoint), closed after an idle delay once its last user released it.
import * as grpc from '@grpc/grpc-js';
import type { TalosCredentials } from './credentials.js';

const TALOS_API_PORT = 50000;
const MAX_MESSAGE = 32 * 1024 * 1024;

/** `host` → `host:50000`; a bare IPv6 address gets brackets. */
export function normaliseEndpoint(endpoint: string): string {
  const e = endpoint.trim();
  if (e.startsWith('[')) return e.includes(']:') ? e : `${e}:${TALOS_API_PORT}`;
  const colons = (e.match(/:/g) ?? []).length;
  if (colons === 0) return `${e}:${TALOS_API_PORT}`;
  if (colons > 1) return `[${e}]:${TALOS_API_PORT}`; // bare IPv6
  return e;
}

export class ChannelSet {
  readonly clients: (grpc.Client | undefined)[];
  refs = 0;
  preferred = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly creds: grpc.ChannelCredentials;

  constructor(
    readonly key: string,
    readonly endpoints: readonly string[],
    readonly credentials: TalosCredentials,
  ) {
    this.clients = endpoints.map(() => undefined);
    this.creds = grpc.credentials.createSsl(
      Buffer.from(credentials.caPem),
      Buffer.from(credentials.keyPem),
      Buffer.from(credentials.certPem),
    );
  }

  client(index: number): grpc.Client {
    const existing = this.clients[index];
    if (existing) return existing;
    const endpoint = this.endpoints[index];
    if (endpoint === undefined) throw new Error(`no endpoint ${index}`);
    const client = new grpc.Client(endpoint, this.creds, {
      'grpc.max_receive_message_length': MAX_MESSAGE,
      'grpc.max_send_message_length': MAX_MESSAGE,
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
      // Reconnect quickly: nodes reboot and endpoints come back within seconds.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 2_000,
    });
    this.clients[index] = client;
    return client;
  }

  acquire(): void {
    this.refs++;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  release(idleCloseMs: number, onClosed: () => void): void {
    this.refs = Math.max(0, this.refs - 1);
    if (this.refs > 0) return;
    const closeNow = (): void => {
      this.closeAll();
      onClosed();
    };
    if (idleCloseMs <= 0) closeNow();
    else {
      this.idleTimer = setTimeout(closeNow, idleCloseMs);
      this.idleTimer.unref();
    }
  }

  closeAll(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    for (const c of this.clients) c?.close();
    this.clients.fill(undefined);
  }

  openChannels(): number {
    return this.clients.filter((c) => c !== undefined).length;
  }
}

const channelSets = new Map<string, ChannelSet>();

/** Shared channel sets currently held (for tests and metrics). */
export function talosChannelStats(): { sets: number; channels: number; refs: number } {
  let channels = 0;
  let refs = 0;
  for (const s of channelSets.values()) {
    channels += s.openChannels();
    refs += s.refs;
  }
  return { sets: channelSets.size, channels, refs };
}

/** Closes every shared channel (process shutdown). */
export function closeAllTalosChannels(): void {
  for (const s of channelSets.values()) s.closeAll();
  channelSets.clear();
}

/** The shared set for these endpoints and credentials, with one more user. */
export function acquireChannelSet(endpoints: readonly string[], credentials: TalosCredentials): ChannelSet {
  const key = `${endpoints.join(',')}|${credentials.fingerprint}`;
  let set = channelSets.get(key);
  if (!set) {
    set = new ChannelSet(key, endpoints, credentials);
    channelSets.set(key, set);
  }
  set.acquire();
  return set;
}

/** One user fewer; the set closes (and is forgotten) after `idleCloseMs` without users. */
export function releaseChannelSet(set: ChannelSet, idleCloseMs: number): void {
  set.release(idleCloseMs, () => {
    if (channelSets.get(set.key) === set) channelSets.delete(set.key);
  });
}
