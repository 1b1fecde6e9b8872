// The client side of the distribution API's auth: on 401 with a Bearer challenge, fetch a token
// from the realm (anonymously, or with Basic credentials) for the challenged scope and retry once.

export interface BearerChallenge {
  realm: string;
  service?: string;
  scope?: string;
}

/** Parses `Bearer realm="…",service="…",scope="…"`; undefined for other schemes. */
export function parseBearerChallenge(header: string | null): BearerChallenge | undefined {
  if (!header || !/^bearer\s/i.test(header)) return undefined;
  const params: Record<string, string> = {};
  for (const m of header.slice(7).matchAll(/([a-zA-Z]+)="([^"]*)"/g)) params[m[1] ?? ''] = m[2] ?? '';
  if (!params.realm) return undefined;
  return { realm: params.realm, service: params.service, scope: params.scope };
}

async function fetchToken(challenge: BearerChallenge, basic?: { user: string; password: string }): Promise<string> {
  const url = new URL(challenge.realm);
  if (challenge.service) url.searchParams.set('service', challenge.service);
  if (challenge.scope) url.searchParams.set('scope', challenge.scope);
  const headers: Record<string, string> = {};
  if (basic) headers.authorization = `Basic ${Buffer.from(`${basic.user}:${basic.password}`).toString('base64')}`;
  const res = await fetch(url, { headers });
  if (!res.ok) throw new Error(`token request to ${url.origin}${url.pathname} failed: ${res.status}`);
  const body = (await res.json()) as { token?: string; access_token?: string };
  const token = body.token ?? body.access_token;
  if (!token) throw new Error('token response without a token');
  return token;
}

export class RegistryClient {
  private readonly tokens = new Map<string, string>();

  constructor(
    private readonly base: string,
    private readonly basic?: { user: string; password: string },
  ) {}

  async fetch(path: string, init: RequestInit & { scope: string }): Promise<Response> {
    const { scope, ...rest } = init;
    const attempt = (): Promise<Response> => {
      const headers = new Headers(rest.headers);
      const token = this.tokens.get(scope);
      if (token) headers.set('authorization', `Bearer ${token}`);
      return fetch(path.startsWith('http') ? path : `${this.base}${path}`, { ...rest, headers });
    };
    const first = await attempt();
    if (first.status !== 401) return first;
    const challenge = parseBearerChallenge(first.headers.get('www-authenticate'));
    if (!challenge) return first;
    await first.body?.cancel();
    this.tokens.set(scope, await fetchToken({ ...challenge, scope: challenge.scope ?? scope }, this.basic));
    return attempt();
  }
}
