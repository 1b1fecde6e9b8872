// The health (/healthz, /readyz) and metrics (/metrics) endpoints.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface BindAddress {
  host: string;
  port: number;
}

/** `:8080` → all interfaces, `127.0.0.1:0` → loopback on a free port; `0` disables the server. */
export function parseBindAddress(text: string): BindAddress | undefined | Error {
  if (text === '0') return undefined;
  const m = /^(\[[0-9a-fA-F:]+\]|[^:]*):(\d{1,5})$/.exec(text);
  const port = Number(m?.[2]);
  if (!m || port > 65535)
    return new Error(`"${text}" is not an address such as ":8080" or "127.0.0.1:8081" (or 0 to disable)`);
  return { host: (m[1] ?? '').replace(/^\[|\]$/g, '') || '0.0.0.0', port };
}

export interface Endpoints {
  healthz: () => boolean;
  readyz: () => { ready: boolean; why: string };
  registry?: Registry;
}

export async function serve(bind: BindAddress, endpoints: Endpoints): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (code: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(code, { 'content-type': type });
      res.end(body);
    };
    if (path === '/healthz')
      return reply(endpoints.healthz() ? 200 : 500, endpoints.healthz() ? 'ok\n' : 'unhealthy\n');
    if (path === '/readyz') {
      const r = endpoints.readyz();
      return reply(r.ready ? 200 : 503, `${r.why}\n`);
    }
    if (path === '/metrics' && endpoints.registry) {
      const registry = endpoints.registry;
      registry.metrics().then(
        (text) => reply(200, text, registry.contentType),
        (err: unknown) => reply(500, String(err)),
      );
      return undefined;
    }
    return reply(404, 'not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(bind.port, bind.host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}
