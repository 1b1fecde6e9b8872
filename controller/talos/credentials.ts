// Talos client credentials from a plan's talosConfig Secret: `ca.crt`, `tls.crt`, `tls.key`, each
// raw PEM or standard base64 of PEM (talosconfig style). Talos writes Ed25519 keys as PKCS#8 DER
// under the label `ED25519 PRIVATE KEY`; Go ignores labels but OpenSSL (and so Node) does not, so
// the block is relabelled `PRIVATE KEY` (the DER is already PKCS#8).
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { TalosApiError } from './errors.js';
import { TalosErrorKind } from '../core/talos-flow.js';

export interface TalosCredentials {
  caPem: string;
  certPem: string;
  keyPem: string;
  /** Subject O= entries of the client certificate, i.e. its Talos roles (`os:admin`, ...). */
  roles: string[];
  notAfter: Date;
  /** Stable identity of this credential set (for channel reuse); not secret-revealing. */
  fingerprint: string;
}

export type SecretData = Readonly<Record<string, string | Uint8Array | undefined>>;

function asText(value: string | Uint8Array): string {
  return typeof value === 'string' ? value : Buffer.from(value).toString('utf8');
}

/** Raw PEM as is; otherwise standard base64 of PEM. */
function pemFrom(value: string | Uint8Array, field: string): string {
  const text = asText(value).trim();
  if (text.startsWith('-----BEGIN ')) return text + '\n';
  const decoded = Buffer.from(text.replace(/\s+/g, ''), 'base64').toString('utf8').trim();
  if (!decoded.startsWith('-----BEGIN ')) {
    throw new TalosApiError({
      kind: TalosErrorKind.BadCredentials,
      message: `Talos credentials: ${field} is neither PEM nor base64 of PEM`,
    });
  }
  return decoded + '\n';
}

export function relabelEd25519Key(pem: string): string {
  return pem
    .replace(/-----BEGIN ED25519 PRIVATE KEY-----/g, '-----BEGIN PRIVATE KEY-----')
    .replace(/-----END ED25519 PRIVATE KEY-----/g, '-----END PRIVATE KEY-----');
}

function rolesOf(cert: X509Certificate): string[] {
  return cert.subject
    .split('\n')
    .filter((line) => line.startsWith('O='))
    .map((line) => line.slice(2));
}

export function loadCredentials(data: SecretData): TalosCredentials {
  const field = (name: string): string | Uint8Array => {
    const v = data[name];
    if (v === undefined || (typeof v === 'string' ? v.trim() === '' : v.length === 0)) {
      throw new TalosApiError({
        kind: TalosErrorKind.BadCredentials,
        message: `Talos credentials: Secret has no ${name}`,
      });
    }
    return v;
  };
  const caPem = pemFrom(field('ca.crt'), 'ca.crt');
  const certPem = pemFrom(field('tls.crt'), 'tls.crt');
  const keyPem = relabelEd25519Key(pemFrom(field('tls.key'), 'tls.key'));
  let cert: X509Certificate;
  try {
    new X509Certificate(caPem);
    cert = new X509Certificate(certPem);
    createPrivateKey(keyPem);
  } catch (err) {
    throw new TalosApiError({
      kind: TalosErrorKind.BadCredentials,
      message: `Talos credentials: cannot parse ca.crt/tls.crt/tls.key: ${(err as Error).message}`,
    });
  }
  const fingerprint = createHash('sha256').update(caPem).update(certPem).update(keyPem).digest('hex').slice(0, 16);
  return { caPem, certPem, keyPem, roles: rolesOf(cert), notAfter: new Date(cert.validTo), fingerprint };
}
