// Maps client-node failures to OutcomeError (see the rules in port.ts). Decisions use the HTTP code
// and the Status object's `reason`, never message text.
import { ApiException } from '@kubernetes/client-node';
import { OutcomeError, OutcomeKind } from '../runtime/outcome.js';

/** The parts of a metav1.Status we act on. client-node (1.4 and 2.x) hands us `.body` as the raw JSON text. */
export interface ApiStatus {
  reason: string | undefined;
  message: string | undefined;
  retryAfterSeconds: number | undefined;
  causes: { reason?: string; message?: string; field?: string }[];
}

export function parseStatusBody(body: unknown): ApiStatus {
  let value: unknown = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      value = undefined;
    }
  }
  const o = isRecord(value) ? value : {};
  const details = isRecord(o['details']) ? o['details'] : {};
  const retry = details['retryAfterSeconds'];
  const causes = Array.isArray(details['causes']) ? details['causes'].filter(isRecord) : [];
  return {
    reason: typeof o['reason'] === 'string' && o['reason'] !== '' ? o['reason'] : undefined,
    message: typeof o['message'] === 'string' ? o['message'] : undefined,
    retryAfterSeconds: typeof retry === 'number' && retry > 0 ? retry : undefined,
    causes,
  };
}

/** Retry-After in ms: the header (seconds or an HTTP date), else the Status detail. */
function retryAfterMs(headers: Record<string, string> | undefined, status: ApiStatus, now: number): number | undefined {
  const header = headerValue(headers, 'retry-after');
  if (header !== undefined) {
    const seconds = Number(header);
    if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const at = Date.parse(header);
    if (Number.isFinite(at)) return Math.max(0, at - now);
  }
  return status.retryAfterSeconds === undefined ? undefined : status.retryAfterSeconds * 1000;
}

export interface MapContext {
  /** What was attempted, for the message: `cordon node w1`. */
  what: string;
  /** The caller's signal: an abort that came from it is `Canceled`, not a timeout. */
  signal?: AbortSignal;
  /** True when our own per-call deadline fired. */
  deadlineExceeded?: boolean;
  now: number;
}

export function toOutcomeError(err: unknown, mc: MapContext): OutcomeError {
  if (err instanceof OutcomeError) return err;
  if (mc.signal?.aborted) {
    return new OutcomeError({
      kind: OutcomeKind.Transient,
      reason: 'Canceled',
      message: `${mc.what}: canceled`,
      cause: err,
    });
  }
  if (mc.deadlineExceeded || isAbortError(err)) {
    return new OutcomeError({
      kind: OutcomeKind.Transient,
      reason: 'Timeout',
      message: `${mc.what}: deadline exceeded`,
      cause: err,
    });
  }
  const code = httpCode(err);
  if (code !== undefined) return fromHttp(code, err, mc);
  const network = networkFailure(err);
  const detail = network ?? (err instanceof Error ? err.message : String(err));
  return new OutcomeError({
    kind: OutcomeKind.Transient,
    reason: network !== undefined ? 'NetworkError' : 'Unexpected',
    message: `${mc.what}: ${detail}`,
    cause: err,
  });
}

/**
 * What went wrong on the wire, or undefined when `err` is no network failure. A system error
 * (`code`: ECONNREFUSED, ...) as it is, or undici's fetch failure (client-node 2.x): a
 * `TypeError('fetch failed')` whose `cause` is the system or TLS error
 * (`UNABLE_TO_VERIFY_LEAF_SIGNATURE`, ...), or a message alone (`bad port`).
 */
export function networkFailure(err: unknown): string | undefined {
  const o = err as { code?: unknown; message?: unknown; cause?: unknown } | null;
  if (typeof o?.code === 'string') return describeSystemError(o);
  if (!(err instanceof TypeError) || err.message !== 'fetch failed') return undefined;
  const cause = err.cause as { code?: unknown; message?: unknown; errors?: unknown } | string | undefined;
  if (typeof cause === 'string') return cause;
  // Several addresses tried (happy eyeballs): an AggregateError of one error per address.
  const first = Array.isArray(cause?.errors) ? (cause.errors[0] as typeof cause) : cause;
  return first ? describeSystemError(first) : err.message;
}

function describeSystemError(e: { code?: unknown; message?: unknown }): string {
  const msg = typeof e.message === 'string' && e.message !== '' ? e.message : 'network error';
  return typeof e.code === 'string' && !msg.includes(e.code) ? `${msg} (${e.code})` : msg;
}

/** Fixed mappings by status code; 409, 429 and 5xx need the body or headers and are handled below. */
const BY_CODE: Readonly<Record<number, { kind: OutcomeKind; reason: string }>> = {
  404: { kind: OutcomeKind.Stalled, reason: 'NotFound' },
  400: { kind: OutcomeKind.Stalled, reason: 'Invalid' },
  422: { kind: OutcomeKind.Stalled, reason: 'Invalid' },
  401: { kind: OutcomeKind.Stalled, reason: 'Forbidden' },
  403: { kind: OutcomeKind.Stalled, reason: 'Forbidden' },
  410: { kind: OutcomeKind.Transient, reason: 'Expired' },
};

function fromHttp(code: number, err: unknown, mc: MapContext): OutcomeError {
  const body = err instanceof ApiException ? (err.body as unknown) : undefined;
  const headers = err instanceof ApiException ? (err.headers as Record<string, string> | undefined) : undefined;
  const status = parseStatusBody(body);
  const base = { code, message: `${mc.what}: ${status.message ?? `HTTP ${code}`}`, cause: err };
  const fixed = BY_CODE[code];
  if (fixed) return new OutcomeError({ ...base, ...fixed });
  if (code === 409) {
    return new OutcomeError({
      ...base,
      kind: OutcomeKind.Transient,
      reason: status.reason === 'AlreadyExists' ? 'AlreadyExists' : 'Conflict',
    });
  }
  const retry = retryAfterMs(headers, status, mc.now);
  if (code === 429)
    return new OutcomeError({ ...base, kind: OutcomeKind.Waiting, reason: 'TooManyRequests', retryAfterMs: retry });
  if (code >= 500) {
    return new OutcomeError({
      ...base,
      kind: OutcomeKind.Transient,
      reason: status.reason ?? 'ServerError',
      ...(retry === undefined ? {} : { retryAfterMs: retry }),
    });
  }
  // Other 4xx (405, 406, 415, ...) mean our request is wrong: retrying will not help.
  return new OutcomeError({ ...base, kind: OutcomeKind.Stalled, reason: status.reason ?? 'BadRequest' });
}

/** The HTTP status of an ApiException, or of the plain Error client-node's Watch throws (`statusCode`). */
function httpCode(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const o = err as { statusCode?: unknown } | null;
  return typeof o?.statusCode === 'number' ? o.statusCode : undefined;
}

function isAbortError(err: unknown): boolean {
  const name = (err as { name?: unknown } | null)?.name;
  return name === 'AbortError' || name === 'TimeoutError';
}

function headerValue(headers: Record<string, string> | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return v;
  return undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
