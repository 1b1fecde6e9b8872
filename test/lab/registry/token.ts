// A tiny token service for the registry's `auth.token` mode, the way Docker Hub's works:
// anonymous callers get pull-only tokens for the scope they ask for; the lab's publisher
// (HTTP Basic with a generated password) gets push too. Tokens are ES256 JWTs whose `kid` is the
// libtrust key ID of the key in the registry's rootcertbundle.
import { createHash, createPrivateKey, createPublicKey, randomBytes, sign, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type HttpFault, serveFault } from '../http-faults.js';

export interface TokenService {
  realm: string;
  service: string;
  issuer: string;
  /** Every token request: scope asked for, actions granted, whether the caller was anonymous. */
  readonly issued: { scope: string; granted: string[]; anonymous: boolean }[];
  /** From now on every token request gets this answer (garbage JSON, HTML, a huge body); undefined: issue tokens again. */
  injectFault(fault: HttpFault | undefined): void;
  stop(): Promise<void>;
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function base32(buf: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** libtrust's key ID: SHA-256 of the PKIX public key, first 240 bits, base32, groups of 4 joined by `:`. */
function libtrustKeyId(publicKeyPem: string): string {
  const der = createPublicKey(publicKeyPem).export({ type: 'spki', format: 'der' });
  const id = base32(createHash('sha256').update(der).digest().subarray(0, 30));
  return id.match(/.{4}/g)?.join(':') ?? id;
}

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

export async function startTokenService(opts: {
  keyPem: string;
  service: string;
  publisher: { user: string; password: string };
}): Promise<TokenService> {
  const key = createPrivateKey(opts.keyPem);
  const kid = libtrustKeyId(createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString());
  const issuer = 'kangal-lab-token-service';
  const issued: TokenService['issued'] = [];
  let fault: HttpFault | undefined;

  const isPublisher = (authorization: string | undefined): boolean => {
    if (!authorization?.toLowerCase().startsWith('basic ')) return false;
    const given = Buffer.from(Buffer.from(authorization.slice(6), 'base64').toString('utf8'));
    const want = Buffer.from(`${opts.publisher.user}:${opts.publisher.password}`);
    return given.length === want.length && timingSafeEqual(given, want);
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://token.invalid');
    if (url.pathname !== '/token' || req.method !== 'GET') {
      res.writeHead(404).end();
      return;
    }
    if (fault) {
      serveFault(res, fault);
      return;
    }
    if (req.headers.authorization && !isPublisher(req.headers.authorization)) {
      res
        .writeHead(401, { 'content-type': 'application/json' })
        .end(JSON.stringify({ errors: [{ code: 'UNAUTHORIZED', message: 'bad credentials' }] }));
      return;
    }
    const publisher = isPublisher(req.headers.authorization);
    const access = url.searchParams.getAll('scope').flatMap((scope) => {
      const [type, ...rest] = scope.split(':');
      const actions = (rest.pop() ?? '').split(',').filter(Boolean);
      const name = rest.join(':');
      const granted = actions.filter((a) => a === 'pull' || (publisher && (a === 'push' || a === 'delete')));
      issued.push({ scope, granted, anonymous: !publisher });
      return type === 'repository' && granted.length > 0 ? [{ type, name, actions: granted }] : [];
    });
    const now = Math.floor(Date.now() / 1000);
    const header = { alg: 'ES256', typ: 'JWT', kid };
    const claims = {
      iss: issuer,
      sub: publisher ? opts.publisher.user : '',
      aud: url.searchParams.get('service') ?? opts.service,
      exp: now + 300,
      nbf: now - 10,
      iat: now,
      jti: randomBytes(12).toString('hex'),
      access,
    };
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
    const signature = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
    const token = `${input}.${b64url(signature)}`;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ token, access_token: token, expires_in: 300, issued_at: new Date(now * 1000).toISOString() }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    realm: `http://127.0.0.1:${port}/token`,
    service: opts.service,
    issuer,
    issued,
    injectFault: (f) => {
      fault = f;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
