// Alertmanager's API v2 over fetch: the only code that speaks to Alertmanager. Firing alerts for the
// alert gate, silences for the nodes being upgraded. The bearer token (optional, for an Alertmanager
// behind an authenticating proxy or a hosted one) is read from its file on every call and never
// appears in a message; TLS is verified by fetch (no option turns that off).
import { formatMatcher, type Matcher } from '../../schemas/matchers.js';
import type { FiringAlert } from '../core/gates/alerts.js';
import type { SilenceRequest } from '../core/job/index.js';
import { deadlineSignal, type OpContext } from '../runtime/context.js';
import { OutcomeError, OutcomeKind } from '../runtime/outcome.js';
import { readTokenFile } from '../runtime/token-file.js';

export interface AlertmanagerOptions {
  /** Base URL, e.g. https://alertmanager.monitoring.svc:9093 (the API is under /api/v2). */
  url: string;
  tokenFile?: string | undefined;
  fetch?: typeof fetch;
}

/** What the controller needs of Alertmanager (ports and projections: the reconcilers see only this). */
export interface AlertmanagerPort {
  /** Active alerts (neither silenced nor inhibited) that match every matcher. */
  firingAlerts(ctx: OpContext, matchers: readonly Matcher[]): Promise<FiringAlert[]>;
  /** Creates the silence, or returns the ID of the live one that already carries its tag. */
  createSilence(ctx: OpContext, request: SilenceRequest): Promise<string>;
  /** Expires the silence `id`, else every live silence carrying `tag`; one already gone is fine. */
  expireSilence(ctx: OpContext, tag: string, id: string | undefined): Promise<void>;
}

interface ApiSilence {
  id: string;
  status: { state: string };
  createdBy: string;
  comment: string;
}

const tagged =
  (tag: string) =>
  (s: ApiSilence): boolean =>
    s.status.state !== 'expired' && s.comment.includes(`[${tag}]`);

/** A request that got no answer: the network may heal; a certificate Alertmanager's CA does not vouch for needs a human. */
function networkError(what: string, err: unknown, timedOut: boolean): OutcomeError {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  const code = typeof cause?.code === 'string' ? cause.code : undefined;
  const why = timedOut
    ? 'no answer before the deadline'
    : code !== undefined
      ? `${code}${typeof cause?.message === 'string' ? `: ${cause.message}` : ''}`
      : err instanceof Error
        ? err.message
        : String(err);
  const tls = code !== undefined && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code);
  return new OutcomeError({
    kind: tls ? OutcomeKind.Stalled : OutcomeKind.Transient,
    reason: tls ? 'AlertmanagerTlsRejected' : 'AlertmanagerUnreachable',
    message: `${what}: ${why}`,
    cause: err,
  });
}

/** An answer other than 2xx: 5xx and 429 may heal, the rest (a bad matcher, a refused token) needs a human. */
function httpError(what: string, status: number, text: string): OutcomeError {
  const detail = text.trim().slice(0, 300);
  const retryable = status >= 500 || status === 429;
  const auth = status === 401 || status === 403;
  return new OutcomeError({
    kind: retryable ? OutcomeKind.Transient : OutcomeKind.Stalled,
    reason: auth ? 'AlertmanagerUnauthorized' : retryable ? 'AlertmanagerUnavailable' : 'AlertmanagerRejected',
    code: status,
    message: `${what}: HTTP ${status}${auth ? ' (check --alertmanager-token-file)' : ''}${detail ? `: ${detail}` : ''}`,
  });
}

export function createAlertmanagerClient(opts: AlertmanagerOptions): AlertmanagerPort {
  const base = opts.url.replace(/\/+$/, '');
  const doFetch = opts.fetch ?? fetch;

  async function call(
    ctx: OpContext,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: unknown }> {
    const token = await readTokenFile(opts.tokenFile, '--alertmanager-token-file', 'AlertmanagerTokenUnreadable');
    const headers: Record<string, string> = { accept: 'application/json' };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const what = `Alertmanager ${method} ${path.replace(/\?.*$/, '')}`;
    const deadline = deadlineSignal(ctx);
    let res: Response;
    let text: string;
    try {
      res = await doFetch(`${base}/api/v2${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: deadline.signal,
        redirect: 'error',
      });
      text = await res.text();
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      throw networkError(what, err, deadline.timedOut());
    } finally {
      deadline.dispose();
    }
    if (res.status >= 200 && res.status < 300)
      return { status: res.status, json: text === '' ? undefined : (JSON.parse(text) as unknown) };
    if (res.status === 404 && method === 'DELETE') return { status: 404, json: undefined };
    throw httpError(what, res.status, text);
  }

  const liveSilences = async (ctx: OpContext, tag: string): Promise<ApiSilence[]> => {
    const { json } = await call(ctx, 'GET', '/silences');
    return (Array.isArray(json) ? (json as ApiSilence[]) : []).filter(tagged(tag));
  };

  return {
    async firingAlerts(ctx, matchers) {
      const query = new URLSearchParams({ active: 'true', silenced: 'false', inhibited: 'false', unprocessed: 'true' });
      for (const m of matchers) query.append('filter', formatMatcher(m));
      const { json } = await call(ctx, 'GET', `/alerts?${query.toString()}`);
      const alerts = Array.isArray(json) ? (json as { fingerprint?: unknown; labels?: unknown }[]) : [];
      return alerts.map((a) => ({
        fingerprint: typeof a.fingerprint === 'string' ? a.fingerprint : '',
        labels: (a.labels ?? {}) as Record<string, string>,
      }));
    },
    async createSilence(ctx, r) {
      const existing = (await liveSilences(ctx, r.tag))[0];
      if (existing) return existing.id;
      const matchers = r.matchers.map((m) => ({
        name: m.name,
        value: m.value,
        isRegex: m.op === '=~' || m.op === '!~',
        isEqual: m.op === '=' || m.op === '=~',
      }));
      const { json } = await call(ctx, 'POST', '/silences', {
        matchers,
        startsAt: new Date(ctx.clock.now()).toISOString(),
        endsAt: r.endsAt,
        createdBy: r.createdBy,
        comment: r.comment,
      });
      const id = (json as { silenceID?: unknown } | undefined)?.silenceID;
      if (typeof id !== 'string' || id === '')
        throw new OutcomeError({
          kind: OutcomeKind.Transient,
          reason: 'AlertmanagerUnavailable',
          message: 'Alertmanager POST /silences: the answer carries no silenceID',
        });
      return id;
    },
    async expireSilence(ctx, tag, id) {
      const ids = id !== undefined ? [id] : (await liveSilences(ctx, tag)).map((s) => s.id);
      for (const each of ids) await call(ctx, 'DELETE', `/silence/${encodeURIComponent(each)}`);
    },
  };
}
