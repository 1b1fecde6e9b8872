// The lab's container registry: Debian's `docker-registry` (distribution 2.8) on a free loopback
// port with a generated config and its own storage dir, optionally behind the token auth flow
// (`auth.token`) with a small token service on loopback.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../net.js';
import { createCA } from '../pki.js';
import { makeLabDir, spawnManaged, type ManagedProcess } from '../process.js';
import { waitFor } from '../wait.js';
import { RegistryClient } from './client.js';
import { buildImage, type Blob } from './image.js';
import { startTokenService, type TokenService } from './token.js';

export { parseBearerChallenge } from './client.js';
export { OCI_MANIFEST, DOCKER_MANIFEST } from './image.js';
export { startRegistryFront, type RegistryFront } from './front.js';

export interface RegistryOptions {
  /** Put the registry behind `auth.token`: anonymous pull tokens, push for the lab's publisher. */
  tokenAuth?: boolean;
  /** The registry binary; Debian's `docker-registry` by default. */
  binary?: string;
  startTimeoutMs?: number;
}

export interface Registry {
  /** `127.0.0.1:PORT`, as an image reference host. */
  readonly host: string;
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** The registry's storage (inside its temp dir, removed on stop()). */
  readonly storageDir: string;
  /** The docker-registry process. */
  readonly pid: number;
  /** Present with `tokenAuth`: the token service (realm, service, issued tokens). */
  readonly tokenService: TokenService | undefined;
  /** Pushes a minimal OCI image (config + one layer + manifest) as `repository:tag`. */
  publish(repository: string, tag: string): Promise<{ digest: string }>;
  stop(): Promise<void>;
}

function configYaml(opts: {
  port: number;
  storage: string;
  secret: string;
  token?: { realm: string; service: string; issuer: string; bundle: string };
}): string {
  const lines = [
    'version: 0.1',
    'log:',
    '  level: info',
    '  formatter: text',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${JSON.stringify(opts.storage)}`,
    '  delete:',
    '    enabled: true',
    '  maintenance:',
    '    uploadpurging:',
    '      enabled: false',
    'http:',
    `  addr: 127.0.0.1:${opts.port}`,
    `  secret: ${opts.secret}`,
    'health:',
    '  storagedriver:',
    '    enabled: false',
  ];
  if (opts.token) {
    lines.push(
      'auth:',
      '  token:',
      `    realm: ${JSON.stringify(opts.token.realm)}`,
      `    service: ${JSON.stringify(opts.token.service)}`,
      `    issuer: ${JSON.stringify(opts.token.issuer)}`,
      `    rootcertbundle: ${JSON.stringify(opts.token.bundle)}`,
    );
  }
  return lines.join('\n') + '\n';
}

export async function startRegistry(opts: RegistryOptions = {}): Promise<Registry> {
  const dir = makeLabDir('kangal-registry');
  const cleanups: (() => Promise<void> | void)[] = [() => dir.remove()];
  const stop = async (): Promise<void> => {
    for (const c of cleanups.splice(0).reverse()) await c();
  };
  try {
    const storage = join(dir.path, 'data');
    mkdirSync(storage, { recursive: true });
    const publisher = { user: 'kangal-lab-publisher', password: randomBytes(16).toString('hex') };
    let tokenService: TokenService | undefined;
    let token: { realm: string; service: string; issuer: string; bundle: string } | undefined;
    if (opts.tokenAuth) {
      const signer = createCA(join(dir.path, 'token'), 'signer', {
        commonName: 'kangal-lab registry token signer',
        keyType: 'ec',
      });
      tokenService = await startTokenService({ keyPem: signer.key, service: 'kangal-lab-registry', publisher });
      const ts = tokenService;
      cleanups.push(() => ts.stop());
      token = { realm: ts.realm, service: ts.service, issuer: ts.issuer, bundle: signer.certPath };
    }
    const port = await freePort();
    const configPath = join(dir.path, 'config.yml');
    writeFileSync(configPath, configYaml({ port, storage, secret: randomBytes(16).toString('hex'), token }));
    // A clean environment: REGISTRY_* variables would override the generated config.
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir.path };
    const proc: ManagedProcess = spawnManaged(
      'docker-registry',
      opts.binary ?? 'docker-registry',
      ['serve', configPath],
      {
        logPath: join(dir.path, 'registry.log'),
        env,
        cwd: dir.path,
      },
    );
    cleanups.push(() => proc.stop());
    const url = `http://127.0.0.1:${port}`;
    let exited = false;
    void proc.exited.then(() => {
      exited = true;
    });
    await waitFor(
      async () => {
        if (exited) throw new Error(`docker-registry exited:\n${proc.tail()}`);
        const res = await fetch(`${url}/v2/`);
        await res.body?.cancel();
        return res.status === 200 || res.status === 401 ? true : undefined;
      },
      { timeoutMs: opts.startTimeoutMs ?? 15_000, intervalMs: 50, description: `docker-registry on ${url}` },
    ).catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${proc.tail()}`);
    });

    const client = new RegistryClient(url, publisher);
    let stopped: Promise<void> | undefined;
    return {
      host: `127.0.0.1:${port}`,
      url,
      storageDir: storage,
      pid: proc.pid,
      tokenService,
      publish: (repository, tag) => publish(client, repository, tag),
      stop() {
        stopped ??= stop();
        return stopped;
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function expectStatus(res: Response, want: number, what: string): Promise<void> {
  if (res.status === want) return;
  throw new Error(`${what}: ${res.status} ${await res.text()}`);
}

async function pushBlob(client: RegistryClient, repository: string, blob: Blob): Promise<void> {
  const scope = `repository:${repository}:pull,push`;
  const head = await client.fetch(`/v2/${repository}/blobs/${blob.digest}`, { method: 'HEAD', scope });
  if (head.status === 200) return;
  const start = await client.fetch(`/v2/${repository}/blobs/uploads/`, { method: 'POST', scope });
  await expectStatus(start, 202, `start upload of ${blob.digest} to ${repository}`);
  await start.body?.cancel();
  const location = start.headers.get('location');
  if (!location) throw new Error('upload started without a Location');
  const put = new URL(location, 'http://registry.invalid');
  put.searchParams.set('digest', blob.digest);
  const target = location.startsWith('http') ? put.toString() : `${put.pathname}${put.search}`;
  const done = await client.fetch(target, {
    method: 'PUT',
    scope,
    headers: { 'content-type': 'application/octet-stream' },
    body: blob.data,
  });
  await expectStatus(done, 201, `upload of ${blob.digest} to ${repository}`);
  await done.body?.cancel();
}

async function publish(client: RegistryClient, repository: string, tag: string): Promise<{ digest: string }> {
  const image = buildImage(repository, tag);
  for (const b of [image.config, ...image.layers]) await pushBlob(client, repository, b);
  const res = await client.fetch(`/v2/${repository}/manifests/${tag}`, {
    method: 'PUT',
    scope: `repository:${repository}:pull,push`,
    headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
    body: image.manifest,
  });
  await expectStatus(res, 201, `manifest ${repository}:${tag}`);
  await res.body?.cancel();
  const digest = res.headers.get('docker-content-digest') ?? image.manifestDigest;
  if (digest !== image.manifestDigest) throw new Error(`registry stored ${digest}, expected ${image.manifestDigest}`);
  return { digest };
}
