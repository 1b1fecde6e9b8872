// An HTTP pass-through to a lab server that can be switched off (connections reset at once): a git
// server or forge API that is "down" for as long as a test wants.
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SwitchableProxy {
  /** `http://127.0.0.1:PORT`: the target's URL with this origin instead. */
  readonly url: string;
  down: boolean;
  readonly server: Server;
  /** `target`-relative URL through the proxy (`http://127.0.0.1:FORGE/acme/plans.git` → `http://127.0.0.1:PROXY/acme/plans.git`). */
  rewrite(targetUrl: string): string;
  close(): Promise<void>;
}

export async function switchableProxy(target: string): Promise<SwitchableProxy> {
  const t = new URL(target);
  let down = false;
  const server = createServer((req, res) => {
    if (down) {
      req.socket.destroy();
      return;
    }
    const up = httpRequest(
      { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    get down() {
      return down;
    },
    set down(v: boolean) {
      down = v;
    },
    server,
    rewrite: (targetUrl) => {
      const u = new URL(targetUrl);
      return `${url}${u.pathname}${u.search}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
