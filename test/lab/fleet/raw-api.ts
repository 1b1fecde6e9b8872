// The fleet's hot path to the apiserver: plain HTTPS with keep-alive and JSON, for the few calls the
// simulated kubelets and workload controllers make per pod and per node (create, status patch,
// delete, read). client-node spends several milliseconds of CPU on each request; at 50,000 pods that
// is minutes of the same two cores the controller under test runs on. Same credentials and TLS
// verification as the kubeconfig's (client-node applies them to the agent options).
import { Agent, request, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** An apiserver answer that is not 2xx: `code` like client-node's ApiException, so apiStatus() reads it. */
class RawApiError extends Error {
  constructor(
    readonly code: number,
    method: string,
    path: string,
    body: string,
  ) {
    super(`${method} ${path}: HTTP ${code}: ${body.slice(0, 300)}`);
  }
}

export interface RawApi {
  get<T>(path: string): Promise<T>;
  post<T>(path: string, body: unknown): Promise<T>;
  mergePatch<T>(path: string, body: unknown): Promise<T>;
  put<T>(path: string, body: unknown): Promise<T>;
  delete(path: string, body?: unknown): Promise<void>;
  close(): void;
}

export async function rawApi(kc: KubeConfig, maxSockets = 32): Promise<RawApi> {
  const server = new URL(kc.getCurrentCluster()?.server ?? '');
  const tls: RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);
  const agent = new Agent({ keepAlive: true, maxSockets, ca: tls.ca, cert: tls.cert, key: tls.key });
  const call = <T>(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string | number> = {
        accept: 'application/json',
        ...(tls.headers as Record<string, string>),
      };
      if (payload !== undefined)
        Object.assign(headers, { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) });
      const req = request({ host: server.hostname, port: server.port, method, path, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const code = res.statusCode ?? 0;
          if (code < 200 || code > 299) return reject(new RawApiError(code, method, path, text));
          resolve((text === '' ? undefined : JSON.parse(text)) as T);
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    });
  return {
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body),
    mergePatch: (path, body) => call('PATCH', path, body, 'application/merge-patch+json'),
    put: (path, body) => call('PUT', path, body),
    delete: async (path, body) => void (await call('DELETE', path, body)),
    close: () => agent.destroy(),
  };
}
