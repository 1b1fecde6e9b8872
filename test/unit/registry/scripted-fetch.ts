// A scripted fetch for the registry client's unit tests: each request gets the next answer, and is
// recorded; one request more than the script holds fails the test. No network.
export const TOKEN = 'tok-ABCDEF-secret';
export const CHALLENGE =
  'Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:siderolabs/installer:pull"';

export interface Call {
  method: string;
  url: string;
  headers: Headers;
  redirect: RequestInit['redirect'];
  signal: AbortSignal | undefined;
}

export type Step = (call: Call) => Response | Promise<Response>;

/** A fetch that answers with `steps` in order and records every request; one more request fails the test. */
export function scripted(...steps: Step[]): { fetch: typeof fetch; calls: Call[] } {
  const calls: Call[] = [];
  const queue = [...steps];
  const f = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const call: Call = {
      method: init?.method ?? 'GET',
      url: input instanceof Request ? input.url : input.toString(),
      headers: new Headers(init?.headers),
      redirect: init?.redirect,
      signal: init?.signal ?? undefined,
    };
    calls.push(call);
    const step = queue.shift();
    if (!step) return Promise.reject(new Error(`unexpected request ${call.method} ${call.url}`));
    return Promise.resolve().then(() => step(call));
  };
  return { fetch: f, calls };
}

export const status =
  (code: number, headers: Record<string, string> = {}, body: string | null = null): Step =>
  () =>
    new Response(body, { status: code, headers });
export const tokenResponse =
  (body: object = { token: TOKEN, expires_in: 300 }): Step =>
  () =>
    new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
