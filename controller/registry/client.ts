// Does an image exist in its registry? One manifest request by the OCI distribution API
// (reference/talos-api.md §5.3): HEAD /v2/<repository>/manifests/<tag or digest>, the anonymous
// bearer-token flow on 401, GET when HEAD is not allowed. Redirects are never followed: a
// manifest request answered with a redirect means the registry knows the manifest (the Image
// Factory redirects to its backing registry by digest), and following would carry our
// Authorization header to another host.
//
// Which tags a repository has: GET /v2/<repository>/tags/list?n=…, the same mirrors, token flow,
// deadline and error kinds, following `Link: <…>; rel="next"` pages on the registry's own origin only.
import { deadlineSignal, type OpContext } from '../runtime/context.js';
import { OutcomeError, OutcomeKind } from '../runtime/outcome.js';
import { checkMirror, isLoopbackHostname, type RegistryMirrors } from './mirrors.js';
import { parseImageReference, type ImageReference } from './reference.js';

interface ImageCheck {
  /** The image as asked for. */
  image: string;
  exists: boolean;
  /** The registry base URL asked (`https://ghcr.io`, or the mirror's); never carries a token. */
  checkedAt: string;
  /** For humans: what answered and how (digest, redirect target host, registry error code, mirror). */
  detail: string;
}

interface TagList {
  /** The repository as asked for (`ghcr.io/siderolabs/installer`). */
  repository: string;
  /** The tags of every page read, in the registry's order; tags that are not strings are skipped. */
  tags: string[];
  /** The registry base URL asked (`https://ghcr.io`, or the mirror's); never carries a token. */
  checkedAt: string;
  /** True when the registry had more pages than MAX_TAG_PAGES: `tags` holds the first pages only. */
  truncated: boolean;
}

export interface RegistryClientOptions {
  mirrors?: RegistryMirrors;
  /** Injected for tests; Node's global fetch (undici, TLS verified) by default. */
  fetch?: typeof fetch;
  userAgent?: string;
}

export interface RegistryClient {
  /** Resolves with exists true/false; rejects with an OutcomeError when it cannot tell. */
  imageExists(ctx: OpContext, image: string): Promise<ImageCheck>;
  /**
   * The tags of a repository given without tag or digest (`ghcr.io/siderolabs/installer`); rejects with
   * an OutcomeError (RepositoryNotFound on a 404) when it cannot list them.
   */
  listTags(ctx: OpContext, repository: string): Promise<TagList>;
}

const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/**
 * What a registry's manifest answer is typed as: an OCI or Docker manifest type (schema 1 included),
 * or plain JSON from older registries. Anything else with a 2xx (an HTML page) is not a registry
 * saying "this image exists", and is never taken for one.
 */
const MANIFEST_TYPE = /^\s*application\/(?:vnd\.(?:oci|docker)\.[\w.+-]+|json)\s*(?:;|$)/i;
/** Bytes read from a token response or an error body at most. */
const MAX_BODY = 64 * 1024;
/** Pages of a tag list read at most; more pages make the list `truncated`. */
export const MAX_TAG_PAGES = 20;
/** Tags asked for per page (`?n=`). */
const TAG_PAGE_SIZE = 1000;
/** Bytes read from one tag list page at most. */
const MAX_TAG_LIST_BODY = 1024 * 1024;
/** Parses a repository without tag or digest as an image reference; never sent anywhere. */
const PLACEHOLDER_DIGEST = `sha256:${'0'.repeat(64)}`;
/** Tokens without `expires_in` live 60 s (Docker token spec); reuse them a little less long. */
const DEFAULT_TOKEN_TTL_S = 60;
const TOKEN_MARGIN_MS = 5_000;
const MAX_CACHED_TOKENS = 64;

interface Target {
  /** The image or repository as asked for. */
  name: string;
  /** What is being done, for messages: `checking image <image>`, `listing tags of <repository>`. */
  what: string;
  ref: ImageReference;
  /** scheme://host[:port] the request goes to. */
  base: string;
  /** Set when `base` is a mirror for the image's registry host. */
  mirrorFor: string | undefined;
}

/** One call (imageExists, listTags) to one registry: its target, deadline signal and pull token. */
interface Attempt {
  target: Target;
  signal: AbortSignal;
  ctx: OpContext;
  /** The token cache key: `<base> <repository>`. */
  key: string;
  /** The anonymous pull token sent, if any: from the cache, or fetched during this call. */
  token: string | undefined;
  /** A token was fetched during this call: another 401 is final. */
  freshToken: boolean;
}

/** The base URL of a registry host: https, or plain http to loopback (Docker's default insecure range). */
function registryBase(host: string): string {
  if (host === 'docker.io') return 'https://registry-1.docker.io';
  const hostname = new URL(`http://${host}`).hostname;
  return `${isLoopbackHostname(hostname) ? 'http' : 'https'}://${host}`;
}

function where(t: Target): string {
  return t.mirrorFor ? `mirror ${t.base} (for ${t.mirrorFor})` : t.base;
}

function fail(
  t: Target,
  init: { kind: OutcomeKind; reason: string; why: string; code?: number; retryAfterMs?: number; cause?: unknown },
): OutcomeError {
  const { why, ...rest } = init;
  return new OutcomeError({ ...rest, message: `${t.what} at ${where(t)}: ${why}` });
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date. */
export function parseRetryAfter(header: string | null, now: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

interface BearerChallenge {
  realm: string;
  service: string | undefined;
  scope: string | undefined;
}

/** `Bearer realm="…",service="…",scope="…"`; undefined for other schemes or without a realm. */
function parseBearerChallenge(header: string | null): BearerChallenge | undefined {
  if (!header) return undefined;
  const m = /^\s*bearer\s+(.*)$/is.exec(header);
  if (!m) return undefined;
  const params = new Map<string, string>();
  for (const p of (m[1] ?? '').matchAll(/([A-Za-z_]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g)) {
    params.set((p[1] ?? '').toLowerCase(), p[2] !== undefined ? p[2].replace(/\\(.)/g, '$1') : (p[3] ?? ''));
  }
  const realm = params.get('realm');
  if (!realm) return undefined;
  return { realm, service: params.get('service'), scope: params.get('scope') };
}

async function discard(res: Response): Promise<void> {
  try {
    await res.body?.cancel();
  } catch {
    // already consumed or broken: nothing to release
  }
}

/** Reads at most `limit` bytes of a body as text. */
async function readCapped(res: Response, limit = MAX_BODY): Promise<string> {
  const reader = (res.body as ReadableStream<Uint8Array> | null)?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

/** The first `errors[].code` of a distribution API error body (`MANIFEST_UNKNOWN`). */
function errorCode(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { errors?: { code?: unknown }[] };
    const code = parsed.errors?.[0]?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}

/** Throws for a 2xx that is not typed as a manifest (an HTML page from a proxy or a web server): it is not taken for the image. */
function assertManifest(t: Target, res: Response): void {
  const type = res.headers.get('content-type');
  if (type === null || MANIFEST_TYPE.test(type)) return;
  throw fail(t, {
    kind: OutcomeKind.Transient,
    reason: 'RegistryBadResponse',
    code: res.status,
    why: `the registry answered HTTP ${res.status} with ${type.split(';')[0]?.trim() ?? type}, not an image manifest; is ${t.base} a container registry (check --registry-mirror)?`,
  });
}

/** Only the host of a redirect target: redirect URLs carry signatures. */
function redirectHost(location: string | null, base: string): string {
  if (!location) return 'no Location';
  try {
    return new URL(location, base).host;
  } catch {
    return 'an unparsable Location';
  }
}

function networkWhy(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  const msg = typeof cause?.message === 'string' ? cause.message : err instanceof Error ? err.message : String(err);
  return code && !msg.includes(code) ? `${msg} (${code})` : msg;
}

/** `{"token": …}` or `{"access_token": …}`, with `expires_in` seconds. */
function tokenFromBody(body: string): { token: string; ttlS: number } | Error {
  let parsed: { token?: unknown; access_token?: unknown; expires_in?: unknown };
  try {
    parsed = JSON.parse(body) as typeof parsed;
  } catch {
    return new Error('answered something that is not JSON');
  }
  const token = [parsed.token, parsed.access_token].find((v): v is string => typeof v === 'string' && v !== '');
  if (!token) return new Error('answered without a token');
  const ttlS = typeof parsed.expires_in === 'number' && parsed.expires_in > 0 ? parsed.expires_in : DEFAULT_TOKEN_TTL_S;
  return { token, ttlS };
}

/**
 * A repository without tag or digest (`ghcr.io/siderolabs/installer`), by the image reference grammar:
 * parsed with a placeholder digest, which no message repeats.
 */
function parseRepository(text: string): ImageReference | Error {
  if (text.includes('@')) return new Error('give the repository without a digest, e.g. ghcr.io/siderolabs/installer');
  const ref = parseImageReference(`${text}@${PLACEHOLDER_DIGEST}`);
  if (ref instanceof Error) return ref;
  if (ref.tag !== undefined)
    return new Error(`give the repository without the tag "${ref.tag}", e.g. ghcr.io/siderolabs/installer`);
  return ref;
}

/** The target of `rel="next"` in a Link header (`</v2/…/tags/list?n=1000&last=v1>; rel="next"`), as written. */
function nextLink(header: string | null): string | undefined {
  if (!header) return undefined;
  for (const link of header.matchAll(/<([^>]*)>([^<]*)/g)) {
    const rel = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(link[2] ?? '');
    if ((rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/).includes('next')) return link[1];
  }
  return undefined;
}

/**
 * The next page's URL: the Link target resolved against the page that named it, on the registry's own
 * origin only (a token goes with it). Messages name origins only: page URLs may carry signatures.
 */
function nextPage(t: Target, header: string | null, pageUrl: string): string | undefined {
  const link = nextLink(header);
  if (link === undefined) return undefined;
  const bad = (why: string): OutcomeError => fail(t, { kind: OutcomeKind.Stalled, reason: 'RegistryBadResponse', why });
  let next: URL;
  try {
    next = new URL(link, pageUrl);
  } catch {
    throw bad("the registry's next-page Link is not a URL");
  }
  const origin = new URL(t.base).origin;
  if (next.origin !== origin)
    throw bad(
      `the registry's next-page Link points to ${next.origin}, not ${origin}; refusing to follow it to another origin`,
    );
  return next.href;
}

/** The tags of one `/tags/list` page: `{ "name": …, "tags": [...] | null }`; tags that are not strings are skipped. */
async function readTagPage(t: Target, res: Response): Promise<string[]> {
  const body = await readCapped(res, MAX_TAG_LIST_BODY);
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const tags =
    typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as { tags?: unknown }).tags
      : undefined;
  if (tags === null) return [];
  if (Array.isArray(tags)) return tags.filter((tag): tag is string => typeof tag === 'string');
  const type = res.headers.get('content-type')?.split(';')[0]?.trim() || 'no content type';
  const what =
    Buffer.byteLength(body) >= MAX_TAG_LIST_BODY ? `more than ${MAX_TAG_LIST_BODY / (1024 * 1024)} MiB` : type;
  throw fail(t, {
    kind: OutcomeKind.Transient,
    reason: 'RegistryBadResponse',
    code: res.status,
    why: `the registry answered HTTP ${res.status} with ${what}, not a JSON tag list ({"name": …, "tags": [...]}); is ${t.base} a container registry (check --registry-mirror)?`,
  });
}

const AUTH_HINT =
  'KangalPatch pulls anonymously: make sure the image name is right and the repository is public, or map this registry to a mirror that serves it anonymously';

export function createRegistryClient(opts: RegistryClientOptions = {}): RegistryClient {
  const doFetch = opts.fetch ?? fetch;
  const userAgent = opts.userAgent ?? 'kangal-patch';
  const mirrors = new Map<string, string>();
  for (const [host, url] of Object.entries(opts.mirrors ?? {})) {
    const checked = checkMirror(host, url);
    if (checked instanceof Error) throw checked;
    mirrors.set(checked.host, checked.url);
  }
  /** `<base> <repository>` → anonymous pull token. */
  const tokens = new Map<string, { token: string; expiresAt: number }>();

  function cachedToken(key: string, now: number): string | undefined {
    const hit = tokens.get(key);
    if (hit && hit.expiresAt > now) return hit.token;
    tokens.delete(key);
    return undefined;
  }

  function remember(key: string, token: string, ttlS: number, now: number): void {
    tokens.delete(key);
    if (tokens.size >= MAX_CACHED_TOKENS) tokens.delete(tokens.keys().next().value ?? '');
    tokens.set(key, { token, expiresAt: now + ttlS * 1000 - TOKEN_MARGIN_MS });
  }

  async function send(a: Attempt, method: 'HEAD' | 'GET', url: string, accept: string): Promise<Response> {
    const headers: Record<string, string> = { accept, 'user-agent': userAgent };
    if (a.token !== undefined) headers.authorization = `Bearer ${a.token}`;
    return doFetch(url, { method, headers, redirect: 'manual', signal: a.signal });
  }

  /**
   * One registry request with the anonymous token flow: with the call's token if it has one; on a 401
   * Bearer challenge, a fresh token (once per call) and the request again. A token refused is forgotten.
   */
  async function request(a: Attempt, method: 'HEAD' | 'GET', url: string, accept: string): Promise<Response> {
    for (;;) {
      const res = await send(a, method, url, accept);
      if (res.status === 401 && !a.freshToken) {
        const challenge = parseBearerChallenge(res.headers.get('www-authenticate'));
        if (challenge) {
          await discard(res);
          const got = await fetchToken(a, challenge);
          a.token = got.token;
          a.freshToken = true;
          remember(a.key, got.token, got.ttlS, a.ctx.clock.now());
          continue;
        }
      }
      if ((res.status === 401 || res.status === 403) && a.token !== undefined) tokens.delete(a.key);
      return res;
    }
  }

  /** The token request URL; the realm must be https (or http to loopback). */
  function tokenUrl(t: Target, challenge: BearerChallenge): URL {
    let realm: URL;
    try {
      realm = new URL(challenge.realm);
    } catch {
      throw fail(t, {
        kind: OutcomeKind.Stalled,
        reason: 'RegistryAuthFailed',
        why: `the registry's token realm "${challenge.realm}" is not a URL`,
      });
    }
    if (realm.protocol !== 'https:' && !(realm.protocol === 'http:' && isLoopbackHostname(realm.hostname))) {
      throw fail(t, {
        kind: OutcomeKind.Stalled,
        reason: 'RegistryAuthFailed',
        why: `the registry's token realm ${realm.origin}${realm.pathname} is not https; refusing to use it`,
      });
    }
    if (challenge.service) realm.searchParams.set('service', challenge.service);
    realm.searchParams.set('scope', challenge.scope ?? `repository:${t.ref.repository}:pull`);
    return realm;
  }

  /** The anonymous token flow: GET realm?service=&scope= → `token` or `access_token`. */
  async function fetchToken(a: Attempt, challenge: BearerChallenge): Promise<{ token: string; ttlS: number }> {
    const t = a.target;
    const url = tokenUrl(t, challenge);
    const realmName = `${url.origin}${url.pathname}`;
    const res = await doFetch(url, {
      headers: { accept: 'application/json', 'user-agent': userAgent },
      signal: a.signal,
    });
    if (res.status === 401 || res.status === 403) {
      await discard(res);
      throw fail(t, {
        kind: OutcomeKind.Stalled,
        reason: 'RegistryAuthFailed',
        code: res.status,
        why: `the token service ${realmName} refused an anonymous pull token (HTTP ${res.status}). ${AUTH_HINT}`,
      });
    }
    if (!res.ok) {
      await discard(res);
      throw statusError(a, res, `the token service ${realmName} answered HTTP ${res.status}`);
    }
    const got = tokenFromBody(await readCapped(res));
    if (got instanceof Error)
      throw fail(t, {
        kind: OutcomeKind.Transient,
        reason: 'RegistryBadResponse',
        why: `the token service ${realmName} ${got.message}`,
      });
    return got;
  }

  /** 429, 5xx and anything else unexpected, as an OutcomeError. */
  function statusError(a: Attempt, res: Response, why: string): OutcomeError {
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), a.ctx.clock.now());
    const code = res.status;
    if (code === 429) {
      return retryAfterMs === undefined
        ? fail(a.target, { kind: OutcomeKind.Transient, reason: 'TooManyRequests', code, why })
        : fail(a.target, {
            kind: OutcomeKind.Waiting,
            reason: 'TooManyRequests',
            code,
            retryAfterMs,
            why: `${why}, retry after ${Math.ceil(retryAfterMs / 1000)} s`,
          });
    }
    if (code >= 500)
      return fail(a.target, {
        kind: OutcomeKind.Transient,
        reason: 'RegistryUnavailable',
        code,
        why,
        ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      });
    // Other 4xx (400, 406, ...): the registry rejects the request itself; retrying will not help.
    return fail(a.target, { kind: OutcomeKind.Stalled, reason: 'RegistryRejected', code, why });
  }

  /** A registry answer that is neither success nor the call's own "not there": 401/403 RegistryAuthFailed, else by statusError. */
  async function refusal(a: Attempt, res: Response): Promise<OutcomeError> {
    await discard(res);
    if (res.status === 401 || res.status === 403) {
      const scheme = /^\s*(\S+)/.exec(res.headers.get('www-authenticate') ?? '')?.[1];
      const how =
        res.status === 401 && scheme && !/^bearer$/i.test(scheme)
          ? `the registry asks for ${scheme} credentials`
          : `HTTP ${res.status} ${a.token !== undefined ? 'with an anonymous pull token' : 'to an anonymous request'}`;
      return fail(a.target, {
        kind: OutcomeKind.Stalled,
        reason: 'RegistryAuthFailed',
        code: res.status,
        why: `${how}. ${AUTH_HINT}`,
      });
    }
    return statusError(a, res, `the registry answered HTTP ${res.status}`);
  }

  async function interpret(a: Attempt, res: Response, method: 'HEAD' | 'GET', url: string): Promise<ImageCheck> {
    const t = a.target;
    const found = (detail: string): ImageCheck => ({
      image: t.name,
      exists: true,
      checkedAt: t.base,
      detail: `${t.name} found at ${where(t)}: ${detail}`,
    });
    if (res.ok) {
      await discard(res);
      assertManifest(t, res);
      const digest = res.headers.get('docker-content-digest');
      return found(`HTTP ${res.status}${digest ? `, digest ${digest}` : ''}`);
    }
    if (REDIRECTS.has(res.status)) {
      await discard(res);
      return found(`HTTP ${res.status} redirect to ${redirectHost(res.headers.get('location'), url)} (not followed)`);
    }
    if (res.status === 404) {
      let code: string | undefined;
      if (method === 'GET') code = errorCode(await readCapped(res));
      else await discard(res);
      return {
        image: t.name,
        exists: false,
        checkedAt: t.base,
        detail: `${t.name} not found at ${where(t)}: HTTP 404${code ? ` ${code}` : ''}`,
      };
    }
    throw await refusal(a, res);
  }

  async function check(a: Attempt): Promise<ImageCheck> {
    const t = a.target;
    const url = `${t.base}/v2/${t.ref.repository}/manifests/${t.ref.reference}`;
    // At most: HEAD, token, HEAD again, then GET if HEAD is not allowed.
    let method: 'HEAD' | 'GET' = 'HEAD';
    let res = await request(a, method, url, MANIFEST_ACCEPT);
    if (res.status === 405 || res.status === 501) {
      await discard(res);
      method = 'GET';
      res = await request(a, method, url, MANIFEST_ACCEPT);
    }
    return interpret(a, res, method, url);
  }

  /** Every page of the tag list, up to MAX_TAG_PAGES; one token flow for all of them. */
  async function tagPages(a: Attempt): Promise<TagList> {
    const t = a.target;
    const tags: string[] = [];
    const list = (truncated: boolean): TagList => ({ repository: t.name, tags, checkedAt: t.base, truncated });
    let url = `${t.base}/v2/${t.ref.repository}/tags/list?n=${TAG_PAGE_SIZE}`;
    for (let page = 1; ; page++) {
      const res = await request(a, 'GET', url, 'application/json');
      if (res.status === 404) {
        const code = errorCode(await readCapped(res));
        throw fail(t, {
          kind: OutcomeKind.Stalled,
          reason: 'RepositoryNotFound',
          code: 404,
          why: `HTTP 404${code ? ` ${code}` : ''}: the registry knows no repository ${t.ref.repository}; check the image name or --registry-mirror`,
        });
      }
      if (!res.ok) throw await refusal(a, res);
      for (const tag of await readTagPage(t, res)) tags.push(tag);
      const next = nextPage(t, res.headers.get('link'), url);
      if (next === undefined) return list(false);
      if (page >= MAX_TAG_PAGES) return list(true);
      url = next;
    }
  }

  function targetFor(ref: ImageReference, name: string, what: string): Target {
    const mirror = mirrors.get(ref.host);
    return { name, what, ref, base: mirror ?? registryBase(ref.host), mirrorFor: mirror ? ref.host : undefined };
  }

  /** Runs one call under the context's signal and deadline; anything but an OutcomeError becomes Canceled, Timeout or NetworkError. */
  async function guarded<T>(ctx: OpContext, target: Target, run: (a: Attempt) => Promise<T>): Promise<T> {
    const deadline = deadlineSignal(ctx);
    try {
      // No request once cancelled or past the deadline; the catch tells which it was.
      deadline.signal.throwIfAborted();
      const key = `${target.base} ${target.ref.repository}`;
      return await run({
        target,
        signal: deadline.signal,
        ctx,
        key,
        token: cachedToken(key, ctx.clock.now()),
        freshToken: false,
      });
    } catch (err) {
      if (err instanceof OutcomeError) throw err;
      if (ctx.signal.aborted)
        throw fail(target, { kind: OutcomeKind.Transient, reason: 'Canceled', why: 'canceled', cause: err });
      if (deadline.timedOut())
        throw fail(target, { kind: OutcomeKind.Transient, reason: 'Timeout', why: 'deadline exceeded', cause: err });
      throw fail(target, { kind: OutcomeKind.Transient, reason: 'NetworkError', why: networkWhy(err), cause: err });
    } finally {
      deadline.dispose();
    }
  }

  async function imageExists(ctx: OpContext, image: string): Promise<ImageCheck> {
    const ref = parseImageReference(image);
    if (ref instanceof Error) {
      throw new OutcomeError({
        kind: OutcomeKind.Stalled,
        reason: 'InvalidImageReference',
        message: `invalid image reference ${JSON.stringify(image)}: ${ref.message}`,
      });
    }
    return guarded(ctx, targetFor(ref, image, `checking image ${image}`), check);
  }

  async function listTags(ctx: OpContext, repository: string): Promise<TagList> {
    const ref = parseRepository(repository);
    if (ref instanceof Error) {
      throw new OutcomeError({
        kind: OutcomeKind.Stalled,
        reason: 'InvalidImageReference',
        message: `invalid repository ${JSON.stringify(repository)}: ${ref.message}`,
      });
    }
    return guarded(ctx, targetFor(ref, repository, `listing tags of ${repository}`), tagPages);
  }

  return { imageExists, listTags };
}
