// What a forge API answers, checked before anything reads it: the body is read up to a cap (a
// runaway or hostile peer cannot fill the controller's memory), and a 2xx answer must be JSON of the
// shape the call expects. Both forge adapters fetch through checkedFetch (Octokit takes it as its
// `request.fetch`), so a wrong answer becomes one ForgeAnswerError naming the endpoint, which
// forgeError (errors.ts) turns into a Transient outcome: the work queue asks again later.
import type { z } from 'zod';
import { formatPath } from '../../schemas/field-path.js';

/** Bytes read at most from one answer: a page of 100 GitHub pull requests is about 3 MB. */
const MAX_FORGE_BODY = 8 * 1024 * 1024;

/** Statuses whose Response may not carry a body. */
const NULL_BODY = new Set([101, 204, 205, 304]);

export type ForgeAnswerReason = 'InvalidResponse' | 'ResponseTooLarge';

/** An answer the controller will not use; `endpoint` is `METHOD url` without the query (never a token: those go in headers). */
export class ForgeAnswerError extends Error {
  constructor(
    readonly reason: ForgeAnswerReason,
    readonly endpoint: string,
    readonly why: string,
  ) {
    super(`${endpoint}: ${why}`);
    this.name = 'ForgeAnswerError';
  }
}

/** The ForgeAnswerError in an error's cause chain (Octokit wraps what its fetch threw). */
export function forgeAnswerErrorIn(err: unknown): ForgeAnswerError | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof ForgeAnswerError) return e;
  }
  return undefined;
}

/** `GET https://host/path` of a request, without its query string. */
export function endpointOf(method: string | undefined, url: string): string {
  const u = new URL(url);
  return `${(method ?? 'GET').toUpperCase()} ${u.origin}${u.pathname}`;
}

/** The whole body, or a ForgeAnswerError once it passes `max` bytes (the rest is not read). */
export async function readCapped(res: Response, endpoint: string, max = MAX_FORGE_BODY): Promise<Buffer> {
  const reader = res.body?.getReader() as ReadableStreamDefaultReader<Uint8Array> | undefined;
  if (!reader) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    size += value.length;
    if (size > max) {
      await reader.cancel();
      throw new ForgeAnswerError(
        'ResponseTooLarge',
        endpoint,
        `the answer is larger than ${max / (1024 * 1024)} MiB; not read further`,
      );
    }
    chunks.push(value);
  }
}

/** A short, printable start of a body that was not what we expected (never pasted whole). */
function glimpse(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > 60 ? `${line.slice(0, 60)}…` : line;
}

/** The JSON of a 2xx answer, checked against `expect.shape`; a ForgeAnswerError says what was wrong. */
function checkJson(endpoint: string, contentType: string | null, bytes: Buffer, expect: Expect): unknown {
  const { shape, what } = expect;
  const text = bytes.toString('utf8');
  if (!/^application\/(?:[\w.+-]*\+)?json\b/i.test(contentType ?? '')) {
    throw new ForgeAnswerError(
      'InvalidResponse',
      endpoint,
      `the forge answered ${contentType || 'no content type'} (${glimpse(text)}), not JSON — is the API URL right, or is a proxy answering?`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ForgeAnswerError('InvalidResponse', endpoint, `the forge's answer is not JSON (${glimpse(text)})`);
  }
  const parsed = shape.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue && issue.path.length > 0 ? ` at ${formatPath(issue.path)}` : '';
    throw new ForgeAnswerError(
      'InvalidResponse',
      endpoint,
      `the forge's answer is not ${what}: ${issue?.message ?? 'wrong shape'}${at}`,
    );
  }
  return json;
}

/** What a call expects of a 2xx answer. */
export interface Expect {
  shape: z.ZodType;
  /** `a pull request`, `a list of labels`, ... for the message. */
  what: string;
}

/**
 * `fetch` whose answers are read at most MAX_FORGE_BODY bytes and, when 2xx and `expect` is given,
 * are JSON of that shape; anything else is a ForgeAnswerError. Error answers (4xx/5xx) pass through
 * with their (capped) body for the caller's status handling.
 */
export function checkedFetch(base: typeof fetch, expect?: Expect): typeof fetch {
  return async (input, init) => {
    const res = await base(input, init);
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const endpoint = endpointOf(init?.method, url);
    if (NULL_BODY.has(res.status) || init?.method?.toUpperCase() === 'HEAD') return res;
    const bytes = await readCapped(res, endpoint);
    if (res.ok && expect) checkJson(endpoint, res.headers.get('content-type'), bytes, expect);
    return new Response(new Uint8Array(bytes), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  };
}
