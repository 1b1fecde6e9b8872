// A TCP pass-through to a lab server that can be switched off: while down, open connections are
// reset and new ones are reset at once, as an unreachable host would. For endpoints whose protocol
// the lab does not want to touch (the Talos API's gRPC over mTLS: the TLS session stays end to end,
// so the client still verifies the simulator's certificate).
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** `127.0.0.1:PORT` */
  readonly endpoint: string;
  down: boolean;
  close(): Promise<void>;
}

export async function tcpProxy(target: string): Promise<TcpProxy> {
  const at = target.lastIndexOf(':');
  const host = target.slice(0, at);
  const port = Number(target.slice(at + 1));
  let down = false;
  const pairs = new Set<Socket>();
  const server: Server = createServer((client) => {
    if (down) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect({ host, port });
    for (const s of [client, upstream]) {
      pairs.add(s);
      s.on('close', () => pairs.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    get down() {
      return down;
    },
    set down(v: boolean) {
      down = v;
      if (v) for (const s of pairs) s.resetAndDestroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of pairs) s.destroy();
        server.close(() => resolve());
      }),
  };
}
