// Token checks the way github.com accepts a token: HTTP Basic with the token as password (e.g.
// `x-access-token:<token>`) or as username, or an `Authorization: Bearer|token <token>` header.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export interface AuthResult {
  ok: boolean;
  /** The user name to hand to git (REMOTE_USER). Never the token. */
  user: string;
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function checkAuth(req: IncomingMessage, token: string): AuthResult {
  const header = req.headers.authorization;
  if (!header) return { ok: false, user: '' };
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();
  if (scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const user = colon < 0 ? decoded : decoded.slice(0, colon);
    const pass = colon < 0 ? '' : decoded.slice(colon + 1);
    if (same(pass, token)) return { ok: true, user: user || 'x-access-token' };
    if (same(user, token)) return { ok: true, user: 'token-user' };
    return { ok: false, user: '' };
  }
  if (scheme === 'bearer' || scheme === 'token') return { ok: same(value, token), user: 'x-access-token' };
  return { ok: false, user: '' };
}
