// Calling the lab forge's GitHub-compatible REST API as the user its token belongs to (the demo
// and the tests look at pull requests and merge them this way).

export interface ForgeAddress {
  apiUrl: string;
  token: string;
}

/** `path` under the API root; a non-2xx answer throws with the method, path, status and body. */
export async function forgeUserCall<T>(
  forge: ForgeAddress,
  path: string,
  init: { method?: string; body?: unknown } = {},
): Promise<T> {
  const res = await fetch(`${forge.apiUrl}${path}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `token ${forge.token}`,
      accept: 'application/vnd.github+json',
      'content-type': 'application/json',
    },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}
