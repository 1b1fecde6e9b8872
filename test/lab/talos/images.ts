// Container images as a simulated Talos node sees them: reference parsing and normalization, where
// an image is published (the lab registry, or "everywhere" without one), and each node's containerd
// stores. Written for the lab from upstream's behaviour, independent of the product's own parsing:
//
// - references are normalized like distribution/reference ParseDockerRef, which Talos applies
//   before every pull (siderolabs/talos internal/pkg/containers/image/pull.go, imageref/imageref.go):
//   `docker.io` default domain with `library/` for one-component names, tag `latest` when neither
//   tag nor digest is given, the tag dropped from `name:tag@digest`;
// - a pull stores the image under the name it was pulled as and creates the aliases upstream's
//   manageAliases creates (internal/pkg/containers/image/aliases.go): the bare digest `sha256:…`,
//   the normalized `name:tag` (tagged pulls) and `name@sha256:…`. containerd then finds an image
//   only by one of those exact names (GetImage, internal/app/lifecycle/container.go).
// - containerd instances: driver CONTAINERD (system containerd) or CRI (the CRI containerd), each
//   with namespaces `system` and (CRI only) `k8s.io`; an unknown driver or namespace, or the CRI
//   namespace on the system containerd, is INVALID_ARGUMENT (internal/app/internal/ctrhelper/ctrhelper.go).
import { ContainerDriver, ContainerdNamespace } from '../../../proto/gen/common/common.js';
import { RegistryClient } from '../registry/client.js';
import { buildImage, DOCKER_MANIFEST, OCI_MANIFEST } from '../registry/image.js';
import { isKubernetesImage } from './machine-config.js';

export interface ImageRef {
  /** Registry host: `ghcr.io`, `factory.talos.dev`, `127.0.0.1:5000`, `docker.io`. */
  domain: string;
  /** Repository path in the registry: `siderolabs/installer`, `metal-installer/<schematic>`. */
  path: string;
  tag: string | undefined;
  digest: string | undefined;
  /** `domain/path` */
  name: string;
  /** ParseDockerRef's spelling: `name@digest` when there is a digest, else `name:tag`. */
  normalized: string;
}

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const TAG = /^\w[\w.-]{0,127}$/;
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;

/** `[rest, suffix]` split at the last `sep` after the last `/`, or `[ref, undefined]`. */
function splitSuffix(ref: string, sep: '@' | ':'): [string, string | undefined] {
  const i = sep === '@' ? ref.indexOf('@') : ref.lastIndexOf(':');
  if (i < 0 || (sep === ':' && i < ref.lastIndexOf('/'))) return [ref, undefined];
  return [ref.slice(0, i), ref.slice(i + 1)];
}

/** Registry domain and repository path components, with docker.io's defaults. */
function domainAndPath(name: string): { domain: string; parts: string[] } {
  const parts = name.split('/');
  const first = parts[0] ?? '';
  let domain = 'docker.io';
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    domain = first.toLowerCase();
    parts.shift();
  }
  if (domain === 'index.docker.io' || domain === 'registry-1.docker.io') domain = 'docker.io';
  if (domain === 'docker.io' && parts.length === 1) parts.unshift('library');
  return { domain, parts };
}

/** Parses and normalizes an image reference; undefined when it is not a valid reference ("invalid reference format"). */
export function parseImageRef(ref: string): ImageRef | undefined {
  if (ref === '' || /\s/.test(ref)) return undefined;
  const [withoutDigest, digest] = splitSuffix(ref, '@');
  if (digest !== undefined && !DIGEST.test(digest)) return undefined;
  const [rest, givenTag] = splitSuffix(withoutDigest, ':');
  if (givenTag !== undefined && !TAG.test(givenTag)) return undefined;
  const { domain, parts } = domainAndPath(rest);
  if (parts.length === 0 || !parts.every((p) => PATH_COMPONENT.test(p))) return undefined;
  const path = parts.join('/');
  const name = `${domain}/${path}`;
  // ParseDockerRef drops the tag of `name:tag@digest` and defaults a bare name to `latest`.
  const tag = digest !== undefined ? undefined : (givenTag ?? 'latest');
  return { domain, path, tag, digest, name, normalized: digest !== undefined ? `${name}@${digest}` : `${name}:${tag}` };
}

/** A published image: its manifest digest and, when known, the tagged reference it was published as. */
export interface PublishedImage {
  digest: string;
  /** `name:tag` the image's content names (the lab registry's images carry their tag as an annotation). */
  origin: string | undefined;
}

/** Where the simulated nodes pull images from. */
export interface ImageSource {
  /** The image a reference names; undefined when the registry has no such manifest (NotFound). Throws when the registry cannot answer. */
  resolve(ref: ImageRef): Promise<PublishedImage | undefined>;
  /** For messages and the simulator's doc: `lab registry http://127.0.0.1:PORT (ghcr.io, factory.talos.dev)` or `every reference resolves`. */
  readonly description: string;
}

/** The origin of every digest the lab has handed out, so a pull by digest knows what it pulled. */
const origins = new Map<string, string>();

function remember(digest: string, origin: string | undefined): PublishedImage {
  if (origin !== undefined) origins.set(digest, origin);
  return { digest, origin: origin ?? origins.get(digest) };
}

const offlineDigests = new Map<string, string>();

/**
 * An image outside the lab registry: treated as published, with the digest the lab registry would
 * give it (the same minimal image `publish` builds for that repository and tag), so names and
 * digests look alike with and without a registry.
 */
function offline(ref: ImageRef): PublishedImage {
  if (ref.digest !== undefined) return remember(ref.digest, undefined);
  const key = `${ref.path}:${ref.tag ?? 'latest'}`;
  let digest = offlineDigests.get(key);
  if (digest === undefined) {
    digest = buildImage(ref.path, ref.tag ?? 'latest').manifestDigest;
    offlineDigests.set(key, digest);
  }
  return remember(digest, ref.normalized);
}

/** The lab registry when given, else every reference resolves. */
export function imageSource(registry: LabRegistryOptions | undefined): ImageSource {
  return registry ? registryImages(registry) : EVERY_IMAGE;
}

/** No registry: every well-formed reference resolves (as before the lab checked images). */
const EVERY_IMAGE: ImageSource = {
  description: 'every well-formed reference resolves',
  resolve: (ref) => Promise.resolve(offline(ref)),
};

/** What the simulator needs to know about the lab registry. */
export interface LabRegistryOptions {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /**
   * Registry hosts the lab registry stands in for, as the product's `--registry-mirror` flags map
   * them (default `ghcr.io` and `factory.talos.dev`). References to the registry's own host are
   * resolved there too; references to any other host, and Kubernetes component images (kubelet, ...,
   * which the lab registry does not hold), resolve as without a registry.
   */
  mirrorOf?: readonly string[];
}

const DEFAULT_MIRRORED_HOSTS: readonly string[] = ['ghcr.io', 'factory.talos.dev'];

const ACCEPT = [
  OCI_MANIFEST,
  'application/vnd.oci.image.index.v1+json',
  DOCKER_MANIFEST,
  'application/vnd.docker.distribution.manifest.list.v2+json',
].join(', ');

/**
 * The image a manifest answer names: undefined when the registry does not hold it (404), an error for
 * any other failure; else its digest, and the tagged name it was published as (the reference's tag,
 * or for a reference by digest the tag the manifest names).
 */
async function publishedFrom(res: Response, ref: ImageRef, url: string): Promise<PublishedImage | undefined> {
  if (res.status === 404) {
    await res.body?.cancel();
    return undefined;
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new Error(
      `unexpected status from GET request to ${url}/v2/${ref.path}/manifests/${ref.digest ?? ref.tag}: ${res.status}`,
    );
  }
  const digest = res.headers.get('docker-content-digest') ?? ref.digest ?? '';
  const manifest = (await res.json()) as { annotations?: Record<string, string> };
  const tag = ref.tag ?? manifest.annotations?.['org.opencontainers.image.ref.name'];
  return remember(digest, tag === undefined ? undefined : `${ref.name}:${tag}`);
}

/** Images of the mirrored hosts are looked up in the lab registry (GET /v2/<path>/manifests/<tag|digest>). */
function registryImages(opts: LabRegistryOptions): ImageSource {
  const url = opts.url.replace(/\/+$/, '');
  const host = new URL(url).host;
  const hosts = new Set([host, ...(opts.mirrorOf ?? DEFAULT_MIRRORED_HOSTS)]);
  const client = new RegistryClient(url);
  return {
    description: `lab registry ${url} (for ${[...hosts].join(', ')}; other hosts: every reference resolves)`,
    async resolve(ref) {
      // Kubernetes component images (ghcr.io/siderolabs/kubelet, ...) are not in the lab registry, which holds installers only.
      if (!hosts.has(ref.domain) || isKubernetesImage(ref.normalized)) return offline(ref);
      const res = await client.fetch(`/v2/${ref.path}/manifests/${ref.digest ?? ref.tag ?? 'latest'}`, {
        method: 'GET',
        headers: { accept: ACCEPT },
        scope: `repository:${ref.path}:pull`,
      });
      return publishedFrom(res, ref, url);
    },
  };
}

/** containerd's answer when a reference is not published, as Talos wraps it (pull.go, then images.go NotFound). */
export function notFoundMessage(ref: ImageRef): string {
  return `failed to pull image "${ref.normalized}": failed to resolve reference "${ref.normalized}": ${ref.normalized}: not found`;
}

/** `CRI/NS_SYSTEM`: one containerd store, by driver and namespace. */
export type StoreKey = string;

/** The containerd instance of a request, as ctrhelper validates it; a message for INVALID_ARGUMENT otherwise. */
export function containerdStore(
  instance: { driver: ContainerDriver; namespace: ContainerdNamespace } | undefined,
): { key: StoreKey } | { invalid: string } {
  const driver = instance?.driver ?? ContainerDriver.CONTAINERD;
  const namespace = instance?.namespace ?? ContainerdNamespace.NS_UNKNOWN;
  if (driver !== ContainerDriver.CONTAINERD && driver !== ContainerDriver.CRI)
    return { invalid: `invalid containerd driver ${driver}` };
  if (namespace !== ContainerdNamespace.NS_SYSTEM && namespace !== ContainerdNamespace.NS_CRI) {
    return { invalid: `invalid containerd namespace ${ContainerdNamespace[namespace] ?? namespace}` };
  }
  if (driver === ContainerDriver.CONTAINERD && namespace === ContainerdNamespace.NS_CRI)
    return { invalid: 'cannot use CRI namespace with containerd driver' };
  return { key: `${ContainerDriver[driver]}/${ContainerdNamespace[namespace]}` };
}

/** An image in a node's containerd store, under one of its names. */
export interface StoredImage {
  digest: string;
  /** The tagged reference the image was published as, when known (what an installer image installs). */
  origin: string | undefined;
}

/**
 * The names a pull leaves in the store (upstream manageAliases) and the name Pull answers: the name
 * containerd created the image under, which is the reference it pulled (containerd's resolver answers
 * the reference it was given). That is the normalized reference (`name:tag`), unless an image
 * verification rule matched (`verified`): then Talos pulls, and names the image, by the digest it
 * verified (`name@sha256:…`; internal/pkg/containers/image/pull.go, verify/verify.go DigestedImageRef).
 */
export function pulledNames(ref: ImageRef, digest: string, verified = false): { answer: string; names: string[] } {
  const names = [digest];
  if (ref.digest === undefined) names.push(ref.normalized, `${ref.name}@${digest}`);
  else names.push(ref.normalized);
  return { answer: verified && ref.digest === undefined ? `${ref.name}@${digest}` : ref.normalized, names };
}
