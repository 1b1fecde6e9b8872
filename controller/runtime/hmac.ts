// HMAC-SHA256 signatures as GitHub writes them (`sha256=<hex>`): the push webhook checks them, the
// notifier's generic webhook receiver sends them (X-KangalPatch-Signature).
import { createHmac, timingSafeEqual } from 'node:crypto';

export function sha256Signature(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Constant-time check of a `sha256=<hex>` header against the body. */
export function signatureMatches(secret: string, body: Buffer, header: string | undefined): boolean {
  if (header === undefined || !header.startsWith('sha256=')) return false;
  const expected = Buffer.from(sha256Signature(secret, body));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
