// Why a TLS handshake failed, when grpc-js only says "Failed to connect".
import { connect as tlsConnect } from 'node:tls';
import type { TalosCredentials } from './credentials.js';

/**
 * grpc-js reports a TLS handshake the server refused (client certificate from another CA, expired,
 * wrong usage) only as "Failed to connect". A plain TLS connection with the same credentials tells
 * why: the server's alert arrives just after the handshake. Undefined when TLS is not the problem
 * (or when `signal` aborts first).
 */
export function diagnoseTls(
  endpoint: string,
  creds: TalosCredentials,
  signal: AbortSignal,
  timeoutMs = 1500,
): Promise<string | undefined> {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(endpoint);
  if (!m?.[1] || !m[2]) return Promise.resolve(undefined);
  const host = m[1];
  const port = Number(m[2]);
  return new Promise((resolve) => {
    let done = false;
    const finish = (why: string | undefined): void => {
      if (done) return;
      done = true;
      signal.removeEventListener('abort', onAbort);
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const socket = tlsConnect({
      host,
      port,
      ca: creds.caPem,
      cert: creds.certPem,
      key: creds.keyPem,
      ALPNProtocols: ['h2'],
      servername: /^[\d.]+$|:/.test(host) ? undefined : host,
    });
    // A socket timeout for this one probe (no clock reading involved).
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    const onAbort = (): void => finish(undefined);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    let secured = false;
    socket.on('secureConnect', () => {
      // TLS 1.3: the server verifies our certificate after we consider the handshake done. An
      // HTTP/2 server speaks first (SETTINGS); one that hangs up instead refused our certificate.
      secured = true;
    });
    socket.on('data', () => finish(undefined));
    socket.on('end', () =>
      finish(
        secured
          ? 'the server closed the connection right after the TLS handshake: it did not accept the client certificate (tls.crt issued by another CA, expired, or without client-auth usage)'
          : undefined,
      ),
    );
    socket.on('error', (err: NodeJS.ErrnoException) => {
      const tlsProblem = /alert|certificate|ssl|tls|self[- ]signed|verify/i.test(`${err.code ?? ''} ${err.message}`);
      finish(tlsProblem ? err.message : undefined);
    });
  });
}
