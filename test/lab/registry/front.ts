// A fault front for the lab registry: a loopback HTTP server that forwards every request to the
// docker-registry behind it, unless an injected fault matches — then it answers that instead (an
// HTML page with 200, a wrong content type, a huge body), as a misconfigured mirror, a captive
// proxy or a broken registry would. The registry process itself stays real and untouched.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type HttpFault, serveFault } from '../http-faults.js';

interface RegistryFault extends HttpFault {
  /** Requests whose path (without the query) matches get this answer. */
  path: RegExp;
  /** Only requests with this method (default: any). */
  method?: string;
}

export interface RegistryFront {
  /** `127.0.0.1:PORT`, as an image reference host (or a mirror's). */
  readonly host: string;
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** Every request, in order: method, path, the status it was answered with, and the bytes sent once it closed (headers included). */
  readonly requests: { method: string; path: string; status: number; bytesSent: number }[];
  /** From now on, a request gets the answer of the first fault that matches it; none: forward everything again. */
  inject(...faults: RegistryFault[]): void;
  stop(): Promise<void>;
}

export async function startRegistryFront(upstreamUrl: string): Promise<RegistryFront> {
  const upstream = new URL(upstreamUrl);
  const requests: RegistryFront['requests'] = [];
  let faults: RegistryFault[] = [];
  const server: Server = createServer((req, res) => {
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const record = { method, path, status: 0, bytesSent: 0 };
    requests.push(record);
    const sentBefore = req.socket.bytesWritten;
    res.on('finish', () => (record.status = res.statusCode));
    res.on('close', () => {
      record.status = res.statusCode;
      record.bytesSent = req.socket.bytesWritten - sentBefore;
    });
    const pathname = new URL(path, 'http://front.invalid').pathname;
    const f = faults.find((x) => x.path.test(pathname) && (x.method === undefined || x.method === method));
    if (f) {
      req.resume();
      serveFault(res, f);
      return;
    }
    const up = request(
      { host: upstream.hostname, port: upstream.port, method, path, headers: { ...req.headers, host: upstream.host } },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}`,
    requests,
    inject: (...f) => {
      faults = f;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
