// Registry mirrors: `ghcr.io=https://mirror.example.com` sends the manifest check for ghcr.io images
// to the mirror instead. HTTPS always; plain http only to a mirror on this machine's loopback.
import { isRegistryHost } from './reference.js';

/** Registry host → mirror base URL, e.g. `'ghcr.io' → 'http://127.0.0.1:5000'`. */
export interface RegistryMirrors {
  [host: string]: string;
}

/** `localhost`, 127.0.0.0/8 or `[::1]`, as `URL.hostname` spells them (IPv4 already normalized). */
export function isLoopbackHostname(hostname: string): boolean {
  const h = hostname.toLowerCase();
  return h === 'localhost' || h === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Checks one mirror entry; returns the normalized `{ host, url }` (url = scheme://host[:port]). */
export function checkMirror(host: string, url: string): { host: string; url: string } | Error {
  const what = `registry mirror ${redact(host)}=${redact(url)}`;
  if (!isRegistryHost(host)) return new Error(`${what}: "${host}" is not a registry host[:port] (e.g. ghcr.io)`);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return new Error(`${what}: "${url}" is not a URL (e.g. https://mirror.example.com)`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    return new Error(`${what}: the URL must be https:// (or http:// to a loopback address)`);
  if (u.username || u.password)
    return new Error(`${what}: credentials do not belong in the URL; mirrors are read anonymously`);
  if (hasMoreThanOrigin(u)) {
    return new Error(
      `${what}: give only scheme://host[:port]; the check asks <mirror>/v2/<repository>/manifests/<tag>`,
    );
  }
  if (u.protocol === 'http:' && !isLoopbackHostname(u.hostname)) {
    return new Error(
      `${what}: plain http is allowed only to loopback (127.0.0.0/8, [::1], localhost); use https://${u.host}`,
    );
  }
  return { host: host.toLowerCase(), url: u.origin };
}

/** The URL names more than scheme://host[:port]: a path, a query or a fragment. */
function hasMoreThanOrigin(u: URL): boolean {
  return (u.pathname !== '/' && u.pathname !== '') || u.search !== '' || u.hash !== '';
}

/** Hides URL user info (`//user:pass@`) in text that goes into a message. */
function redact(text: string): string {
  return text.replace(/\/\/[^/@]*@/g, '//***@');
}

/** Parses a `HOST=URL` flag value, e.g. `ghcr.io=http://127.0.0.1:5000`. */
export function parseMirrorFlag(text: string): { host: string; url: string } | Error {
  const eq = text.indexOf('=');
  if (eq < 0)
    return new Error(`registry mirror "${redact(text)}": expected HOST=URL, e.g. ghcr.io=https://mirror.example.com`);
  const host = text.slice(0, eq).trim();
  const url = text.slice(eq + 1).trim();
  if (!host || !url)
    return new Error(`registry mirror "${redact(text)}": expected HOST=URL, e.g. ghcr.io=https://mirror.example.com`);
  return checkMirror(host, url);
}
