import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { CertFiles } from '../pki.js';

/** A GET that never throws for HTTP errors: readiness probes look at the status. */
export function httpGet(url: string, caPem?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const isHttps = url.startsWith('https:');
    const req = (isHttps ? httpsRequest : httpRequest)(url, { ca: caPem, timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

/** A kubeconfig authenticating with a client certificate and its key (PEM). */
export function kubeconfigYaml(
  server: string,
  caPem: string,
  client: Pick<CertFiles, 'cert' | 'key'>,
  user = 'admin',
): string {
  return kubeconfigFor(server, caPem, user, [
    `    client-certificate-data: ${b64(client.cert)}`,
    `    client-key-data: ${b64(client.key)}`,
  ]);
}

/** A kubeconfig authenticating with a bearer token (e.g. a ServiceAccount's, from the TokenRequest API). */
export function tokenKubeconfigYaml(server: string, caPem: string, token: string, user: string): string {
  return kubeconfigFor(server, caPem, user, [`    token: ${token}`]);
}

function kubeconfigFor(server: string, caPem: string, user: string, credentials: string[]): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: kangal-lab',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(caPem)}`,
    'users:',
    `- name: ${user}`,
    '  user:',
    ...credentials,
    'contexts:',
    '- name: kangal-lab',
    '  context:',
    '    cluster: kangal-lab',
    `    user: ${user}`,
    'current-context: kangal-lab',
    '',
  ].join('\n');
}
